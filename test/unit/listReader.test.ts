import { describe, expect, it } from 'vitest';
import type { ApiError } from '../../src/api/apiErrors.js';
import { MAX_LISTED_ID_LENGTH, listEnvelopeSchema, readAllIds } from '../../src/api/listReader.js';
import {
  LoopbackService,
  RecordingGate,
  clientFor,
  type CannedReply,
  type RecordedRequest,
} from './loopbackService.js';

async function serve(reply: (request: RecordedRequest) => CannedReply) {
  const service = await LoopbackService.start(reply);
  const gate = new RecordingGate();
  const client = clientFor(service.url, gate);
  return { gate, client, service };
}

/** A list of `total` careers `c-0..`, answering limit/offset like the service would. */
const careers =
  (total: number, wrap: (items: unknown[]) => unknown = (data) => ({ data }), idField = 'id') =>
  (request: RecordedRequest): CannedReply => {
    const limit = Number(request.url.searchParams.get('limit'));
    const offset = Number(request.url.searchParams.get('offset'));
    const items = Array.from({ length: Math.max(0, Math.min(limit, total - offset)) }, (_, i) => ({
      [idField]: `c-${offset + i}`,
      name: 'x',
    }));
    return { status: 200, body: wrap(items) };
  };

const offsets = (s: LoopbackService): number[] => s.requests.map((r) => Number(r.url.searchParams.get('offset')));

describe('readAllIds', () => {
  it('pages with limit and offset until a short page, at discovery priority', async () => {
    const { gate, client: c, service: s } = await serve(careers(7));
    const result = await readAllIds(c, '/api/v1/careers', listEnvelopeSchema.parse({ pageSize: 3 }));
    expect(result).toEqual({ ids: ['c-0', 'c-1', 'c-2', 'c-3', 'c-4', 'c-5', 'c-6'], truncated: false });
    expect(offsets(s)).toEqual([0, 3, 6]);
    expect(s.requests.every((r) => r.url.searchParams.get('limit') === '3')).toBe(true);
    expect(gate.acquired).toEqual(['discovery', 'discovery', 'discovery']);
  });

  it('asks once more after an exactly full last page, and stops at the empty one', async () => {
    const { client: c, service: s } = await serve(careers(6));
    expect((await readAllIds(c, '/api/v1/careers', listEnvelopeSchema.parse({ pageSize: 3 }))).ids).toHaveLength(6);
    expect(offsets(s)).toEqual([0, 3, 6]);
  });

  it('reads a custom envelope with a dotted itemsPath and another id field', async () => {
    const { client: c } = await serve(careers(2, (items) => ({ result: { items, next: null }, meta: {} }), 'careerId'));
    const result = await readAllIds(
      c,
      '/api/v1/careers',
      listEnvelopeSchema.parse({ itemsPath: 'result.items', idField: 'careerId' }),
    );
    expect(result.ids).toEqual(['c-0', 'c-1']);
  });

  it('says which setting to change when the items are not where it looks', async () => {
    const { client: c } = await serve(() => ({
      status: 200,
      headers: { 'x-request-id': 'req-l' },
      body: { items: [] },
    }));
    const error = (await readAllIds(c, '/api/v1/skills', listEnvelopeSchema.parse({})).catch(
      (e: unknown) => e,
    )) as ApiError;
    expect(error.code).toBe('API_MALFORMED_RESPONSE');
    expect(error.message).toContain('no array at "data" (set discovery.envelope.itemsPath; request req-l)');
  });

  it('names the item without a string id', async () => {
    const { client: c } = await serve(() => ({ status: 200, body: { data: [{ id: 'c-1' }, { id: 7 }] } }));
    const error = (await readAllIds(c, '/api/v1/careers', listEnvelopeSchema.parse({})).catch(
      (e: unknown) => e,
    )) as ApiError;
    expect(error.code).toBe('API_MALFORMED_RESPONSE');
    expect(error.message).toContain('no string "id" at data[1]');
  });

  it('refuses an id longer than any id, instead of holding one per object listed', async () => {
    // 200 such ids fill a 16 MiB page; 51 pages would hold 800 MB and watch 10,200 such logs.
    const long = 'c'.repeat(80_000);
    const { client: c } = await serve(() => ({ status: 200, body: { data: [{ id: 'c-1' }, { id: long }] } }));
    const error = (await readAllIds(c, '/api/v1/careers', listEnvelopeSchema.parse({})).catch(
      (e: unknown) => e,
    )) as ApiError;
    expect(error.code).toBe('API_MALFORMED_RESPONSE');
    expect(error.message).toContain(`an "id" of 80000 characters at data[1], more than ${MAX_LISTED_ID_LENGTH}`);
  });

  it('takes an id of MAX_LISTED_ID_LENGTH characters: ids are opaque, of no length the spec gives', async () => {
    const longest = 'c'.repeat(MAX_LISTED_ID_LENGTH);
    const { client: c } = await serve(() => ({ status: 200, body: { data: [{ id: 'c-1' }, { id: longest }] } }));
    const result = await readAllIds(c, '/api/v1/careers', listEnvelopeSchema.parse({}));
    expect(result.ids).toEqual(['c-1', longest]);
  });

  it('reports truncation when more items exist than offsets can reach', async () => {
    const { client: c, service: s } = await serve(careers(20_000));
    const result = await readAllIds(c, '/api/v1/careers', listEnvelopeSchema.parse({}));
    expect(result.truncated).toBe(true);
    expect(result.ids).toHaveLength(10_200);
    expect(offsets(s).at(-1)).toBe(10_000);
  });

  it('reads every id that offsets up to 10,000 can reach when the page size does not divide 10,000', async () => {
    const { client: c, service: s } = await serve(careers(10_100));
    const result = await readAllIds(c, '/api/v1/careers', listEnvelopeSchema.parse({ pageSize: 150 }));
    expect(new Set(result.ids).size).toBe(10_100);
    expect(result.ids).toHaveLength(10_100);
    expect(result.truncated).toBe(false);
    expect(offsets(s).at(-1)).toBe(10_000);
  });
});
