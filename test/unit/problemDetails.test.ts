import { describe, expect, it } from 'vitest';
import { formatFieldErrors, parseProblemDetails } from '../../src/api/problemDetails.js';

const doc = (fields: Record<string, unknown>): string =>
  JSON.stringify({ title: 'T', status: 400, detail: 'd', instance: '/api/v1/x', requestId: 'req-1', ...fields });

describe('parseProblemDetails', () => {
  it('reads every spec field and takes the slug from the last segment of the type URI', () => {
    const p = parseProblemDetails(
      404,
      doc({ type: 'https://errors.example/not-found', status: 404, detail: 'no such career' }),
    );
    expect(p).toEqual({
      slug: 'not-found',
      type: 'https://errors.example/not-found',
      title: 'T',
      status: 404,
      detail: 'no such career',
      instance: '/api/v1/x',
      requestId: 'req-1',
      errors: [],
      error: undefined,
      upgradeUrl: undefined,
    });
  });

  it('ignores a trailing slash, query or fragment when taking the slug', () => {
    expect(parseProblemDetails(400, doc({ type: 'https://errors.example/validation-error/' })).slug).toBe(
      'validation-error',
    );
    expect(parseProblemDetails(400, doc({ type: 'https://errors.example/validation-error?lang=en' })).slug).toBe(
      'validation-error',
    );
    expect(parseProblemDetails(400, doc({ type: 'https://errors.example/validation-error#x' })).slug).toBe(
      'validation-error',
    );
  });

  it('has no slug when the document has no type', () => {
    expect(parseProblemDetails(500, doc({})).slug).toBeUndefined();
  });

  it('keeps the field errors of a validation-error and formats them for a message', () => {
    const p = parseProblemDetails(
      400,
      doc({
        type: 'https://errors.example/validation-error',
        errors: [
          { field: 'limit', code: 'out_of_range', message: 'must be at most 200' },
          { field: 'from', code: 'invalid_timestamp', message: '' },
        ],
      }),
    );
    expect(p.errors).toEqual([
      { field: 'limit', code: 'out_of_range', message: 'must be at most 200' },
      { field: 'from', code: 'invalid_timestamp', message: '' },
    ]);
    expect(formatFieldErrors(p)).toBe('limit: out_of_range (must be at most 200); from: invalid_timestamp');
  });

  it('blanks malformed parts of a field error instead of dropping the document', () => {
    const p = parseProblemDetails(
      400,
      doc({ type: 'https://errors.example/validation-error', errors: [{ field: 'limit', code: 7 }] }),
    );
    expect(p.slug).toBe('validation-error');
    expect(p.errors).toEqual([{ field: 'limit', code: '', message: '' }]);
  });

  it('reads trial_expired and its upgrade_url from a 403', () => {
    const p = parseProblemDetails(
      403,
      doc({ status: 403, error: 'trial_expired', upgrade_url: 'https://svc.example/billing' }),
    );
    expect(p.error).toBe('trial_expired');
    expect(p.upgradeUrl).toBe('https://svc.example/billing');
  });

  it('cuts what a hostile document says at a few hundred characters, and keeps its first ten field errors', () => {
    const p = parseProblemDetails(
      400,
      doc({
        type: `https://errors.example/${'t'.repeat(10_000)}`,
        title: 'T'.repeat(10_000),
        detail: `${'d'.repeat(499)}\u{1F600}${'d'.repeat(60_000)}`,
        requestId: 'r'.repeat(10_000),
        error: 'e'.repeat(10_000),
        upgrade_url: 'u'.repeat(10_000),
        errors: Array.from({ length: 2_000 }, (_, i) => ({
          field: `f${i}`.padEnd(1_000, 'f'),
          code: 'c'.repeat(1_000),
          message: 'm'.repeat(1_000),
        })),
      }),
    );
    expect(p.detail).toBe(`${'d'.repeat(499)}... (cut)`);
    for (const text of [p.type, p.title, p.requestId, p.error, p.upgradeUrl])
      expect(text).toHaveLength(200 + '... (cut)'.length);
    expect(p.errors).toHaveLength(11);
    expect(p.errors[10]).toEqual({ field: '...', code: '1990 more', message: '' });
    expect(formatFieldErrors(p).length).toBeLessThan(10 * 3 * 220);
  });

  it('keeps the HTTP status when the document does not state one', () => {
    expect(parseProblemDetails(503, JSON.stringify({ type: 'https://errors.example/internal-error' })).status).toBe(
      503,
    );
  });

  it('turns an HTML error page from a proxy into a short excerpt of the body', () => {
    const html = `<html>\n  <body>\n    <h1>502 Bad Gateway</h1>${'x'.repeat(500)}</body></html>`;
    const p = parseProblemDetails(502, html);
    expect(p.status).toBe(502);
    expect(p.slug).toBeUndefined();
    expect(p.detail).toMatch(/^non-problem body: <html> <body> <h1>502 Bad Gateway<\/h1>x+$/);
    expect(p.detail!.length).toBe('non-problem body: '.length + 200);
  });

  it('has no detail for an empty or blank body', () => {
    expect(parseProblemDetails(500, '').detail).toBeUndefined();
    expect(parseProblemDetails(500, '  \n ').detail).toBeUndefined();
  });

  it('treats JSON that is not an object as a non-problem body', () => {
    expect(parseProblemDetails(500, '["oops"]')).toMatchObject({
      status: 500,
      slug: undefined,
      detail: 'non-problem body: ["oops"]',
    });
    expect(parseProblemDetails(500, 'null').detail).toBe('non-problem body: null');
  });
});
