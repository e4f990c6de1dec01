import { describe, expect, it } from 'vitest';
import { ceBinaryHeaders } from '../../src/sinks/cloudEventsHttp.js';

describe('ceBinaryHeaders', () => {
  it.each([
    ['plain', 'com.x.career.level_added', 'com.x.career.level_added'],
    ['space, quote, percent', 'a b"c%', 'a%20b%22c%25'],
    ['control characters from event data', 'x\r\n\u0001', 'x%0D%0A%01'],
    ['non-ASCII', 'é', '%C3%A9'],
    // encodeURIComponent threw URIError here, failing the write of that event for ever.
    ['a lone surrogate', 'lone\ud800', 'lone%EF%BF%BD'],
  ])('percent-encodes %s', (_name, type, expected) => {
    expect(ceBinaryHeaders({ specversion: '1.0', type, data: {} })['ce-type']).toBe(expected);
  });
});
