import { CloudEvent, HTTP } from 'cloudevents';
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

// Why the binary mode is not the `cloudevents` SDK's HTTP.binary: the HTTP binding (3.1.3.2)
// wants space, '"', '%' and everything outside printable ASCII percent-encoded in ce-* values.
// The SDK (10.0.0) copies them raw, so a non-ASCII or control character from the service's data
// makes an invalid header. And constructing its CloudEvent adds a `time` the entry did not have
// and reorders attributes, so the stored bytes would change.
describe('the cloudevents SDK, where ours stays', () => {
  const attributes = {
    specversion: '1.0' as const,
    id: 'x',
    source: 'https://svc.example/x',
    type: 'com.x.career.é lone\ud800',
    subject: 'a b"c\r\n',
    datacontenttype: 'application/json',
    data: { s: 'lone\ud800' },
  };

  it('leaves ce-* header values unencoded, where ours follows the binding', () => {
    const sdk = HTTP.binary(new CloudEvent(attributes)).headers as Record<string, string>;
    expect(sdk['ce-type']).toBe(attributes.type);
    expect(sdk['ce-subject']).toBe(attributes.subject);
    const ours = ceBinaryHeaders(attributes);
    expect(ours['ce-type']).toBe('com.x.career.%C3%A9%20lone%EF%BF%BD');
    expect(ours['ce-subject']).toBe('a%20b%22c%0D%0A');
  });

  it('adds a time the event did not carry', () => {
    expect(new CloudEvent(attributes).time).toEqual(expect.any(String));
  });
});
