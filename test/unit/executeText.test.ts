import { describe, expect, it } from 'vitest';
import { executeText } from '../../src/store/postgres/executeText.js';

// As node-postgres's Client.escapeLiteral and escapeIdentifier quote.
const quote = (text: string): string => {
  const escaped = text.replace(/'/g, "''");
  return text.includes('\\') ? ` E'${escaped.replace(/\\/g, '\\\\')}'` : `'${escaped}'`;
};
const quoteName = (name: string): string => `"${name.replace(/"/g, '""')}"`;

describe('executeText: a prepared statement with its values written in, for a simple query', () => {
  it.each([
    { params: [], text: 'EXECUTE "cf_a"()' },
    { params: ["o'hara", 'career'], text: `EXECUTE "cf_a"('o''hara', 'career')` },
    { params: [1.5, 0, -3, Number.NaN], text: `EXECUTE "cf_a"('1.5', '0', '-3', 'NaN')` },
    { params: [1_764_000_000_000.125], text: `EXECUTE "cf_a"('1764000000000.125')` },
    { params: [null, undefined, true], text: `EXECUTE "cf_a"(NULL, NULL, 'true')` },
    { params: [[1, 2, 3]], text: `EXECUTE "cf_a"('{"1","2","3"}')` },
    { params: [[]], text: `EXECUTE "cf_a"('{}')` },
    // An element's quote or backslash is escaped in the array, then the backslashes in the literal.
    { params: [['a', null, 'say "hi"']], text: String.raw`EXECUTE "cf_a"( E'{"a",NULL,"say \\"hi\\""}')` },
    { params: [['a\\b']], text: String.raw`EXECUTE "cf_a"( E'{"a\\\\b"}')` },
  ])('$params', ({ params, text }) => {
    expect(executeText('cf_a', params, quote, quoteName)).toBe(text);
  });

  it.each([{ params: [{ a: 1 }] }, { params: [[[1]]] }, { params: [Buffer.from('x')] }, { params: [[{ a: 1 }]] }])(
    'is not written for a parameter the store does not send: $params',
    ({ params }) => {
      expect(executeText('cf_a', params, quote, quoteName)).toBeUndefined();
    },
  );
});
