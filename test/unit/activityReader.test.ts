import { createServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { JSONParser } from '@streamparser/json';
import { describe, expect, it, vi } from 'vitest';
import { ForbiddenFilterError, readActivityPage, type ActivityPageRequest } from '../../src/api/activityReader.js';
import type { ApiError } from '../../src/api/apiErrors.js';
import type { ServiceClient } from '../../src/api/serviceClient.js';
import { LoopbackService, RecordingGate, clientFor, type CannedReply } from './loopbackService.js';

async function serve(reply: CannedReply) {
  const service = await LoopbackService.start(() => reply);
  const gate = new RecordingGate();
  const client = clientFor(service.url, gate);
  return { gate, client, service };
}

const page = (over: Partial<ActivityPageRequest> = {}): ActivityPageRequest => ({
  log: 'career',
  objectId: 'c-1',
  offset: 0,
  limit: 200,
  ...over,
});

async function rejection(c: ServiceClient, request: ActivityPageRequest): Promise<Error> {
  try {
    await readActivityPage(c, request);
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the read to be refused');
}

describe('readActivityPage', () => {
  it('reads a windowed career page with its filters, tolerating extra envelope keys', async () => {
    const entries = [
      {
        id: 'e-1',
        event: 'level_added',
        performedAt: '2026-03-01T10:00:00Z',
        relatedPersonId: 'p-1',
        somethingNew: { x: 1 },
      },
      { id: 'e-2', event: null, performedAt: null },
    ];
    const {
      gate,
      client: c,
      service: s,
    } = await serve({
      status: 200,
      headers: { 'x-request-id': 'req-1' },
      body: { data: entries, pagination: { limit: 200, offset: 0, total: 2 }, links: {}, _debug: 'x' },
    });
    const result = await readActivityPage(
      c,
      page({
        from: '2026-03-01T00:00:00.000Z',
        to: '2026-03-02T00:00:00.000Z',
        offset: 400,
      }),
    );
    expect(result.entries).toEqual(entries);
    expect(result.meta.requestId).toBe('req-1');
    const url = s.requests[0]!.url;
    expect(url.pathname).toBe('/api/v1/careers/c-1/activity');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      from: '2026-03-01T00:00:00.000Z',
      to: '2026-03-02T00:00:00.000Z',
      limit: '200',
      offset: '400',
    });
    expect(gate.acquired).toEqual(['poll']);
  });

  it('reads the identity-provider log with its own priority and no object id', async () => {
    const { gate, client: c, service: s } = await serve({ status: 200, body: { data: [] } });
    await readActivityPage(c, { log: 'identity_provider', offset: 0, limit: 50 });
    expect(s.requests[0]!.url.pathname).toBe('/api/v1/identity-provider-events');
    expect(gate.acquired).toEqual(['identity_provider']);
  });

  it('accepts the largest limit and offset the spec allows', async () => {
    const { service: s, client: c } = await serve({ status: 200, body: { data: [] } });
    await readActivityPage(c, page({ limit: 200, offset: 10_000 }));
    expect(s.requests[0]!.url.searchParams.get('offset')).toBe('10000');
  });

  const refused: [string, ActivityPageRequest, RegExp][] = [
    [
      'from on the skill log',
      page({ log: 'skill', objectId: 's-1', from: '2026-03-01T00:00:00Z' }),
      /skill log rejects the filter "from"/,
    ],
    [
      'to on the skill log',
      page({ log: 'skill', objectId: 's-1', to: '2026-03-01T00:00:00Z' }),
      /skill log rejects the filter "to"/,
    ],
    ['limit 201', page({ limit: 201 }), /limit 201 is outside 1..200/],
    ['limit 0', page({ limit: 0 }), /limit 0 is outside/],
    ['offset 10001', page({ offset: 10_001 }), /offset 10001 is outside 0..10000/],
    ['a negative offset', page({ offset: -1 }), /offset -1 is outside/],
    ['a fractional limit', page({ limit: 10.5 }), /limit 10.5 is outside/],
  ];
  for (const [what, request, message] of refused) {
    it(`refuses ${what} without sending anything`, async () => {
      const { gate, client: c, service: s } = await serve({ status: 200, body: { data: [] } });
      const error = await rejection(c, request);
      expect(error).toBeInstanceOf(ForbiddenFilterError);
      expect((error as ForbiddenFilterError).code).toBe('FORBIDDEN_FILTER');
      expect(error.message).toMatch(message);
      expect(gate.acquired).toEqual([]);
      expect(s.requests).toEqual([]);
    });
  }

  it('reports a body without a data array as API_MALFORMED_RESPONSE', async () => {
    const { client: c } = await serve({
      status: 200,
      headers: { 'x-request-id': 'req-9' },
      body: { data: { items: [] } },
    });
    const error = (await rejection(c, page())) as ApiError;
    expect(error.code).toBe('API_MALFORMED_RESPONSE');
    expect(error.message).toContain('has no "data" array (request req-9)');
    expect(error.requestId).toBe('req-9');
  });

  it('quarantines an entry without an id, naming the entry and field, and keeps the rest of the page', async () => {
    const { client: c } = await serve({ status: 200, body: { data: [{ id: 'e-1' }, { event: 'x' }] } });
    const read = await readActivityPage(c, page());
    expect(read.entries.map((e) => e.id)).toEqual(['e-1']);
    expect(read.quarantined).toEqual([
      expect.objectContaining({
        reason: expect.stringMatching(/^data\[1\]: id: /),
        raw: '{"event":"x"}',
        entryId: undefined,
      }),
    ]);
  });

  it('quarantines an entry whose timestamp does not parse, naming the field', async () => {
    const { client: c } = await serve({ status: 200, body: { data: [{ id: 'e-1', performedAt: 'last tuesday' }] } });
    const read = await readActivityPage(c, page());
    expect(read.entries).toEqual([]);
    expect(read.quarantined[0]?.reason).toBe('data[0]: performedAt: performedAt is not an ISO 8601 timestamp');
    expect(read.quarantined[0]?.entryId).toBe('e-1');
  });

  it('refuses a page with more entries than the limit asked for while it streams in', async () => {
    const { client: c } = await serve({
      status: 200,
      body: { data: Array.from({ length: 11 }, (_, i) => ({ id: `e-${i}` })) },
    });
    const error = (await rejection(c, { ...page(), limit: 10 })) as ApiError;
    expect(error.code).toBe('API_MALFORMED_RESPONSE');
    expect(error.message).toContain('holds more than the 10 entries the limit asked for');
  });

  // The reader stopped at the end of `data`: the body was destroyed unfinished (an AbortError with
  // its stack per page), and when the envelope's rest had not arrived yet, its connection with it.
  it('reads the envelope after `data` to its end, so the next page reuses the connection', async () => {
    let connections = 0;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[{"id":"e-1"}]');
      setTimeout(() => res.end(',"pagination":{"limit":200,"offset":0,"total":1}}'), 30);
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const c = clientFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, new RecordingGate());
      for (let i = 0; i < 3; i++) {
        expect((await readActivityPage(c, page())).entries).toEqual([{ id: 'e-1' }]);
        // The pool frees the connection of a finished response on its next turn.
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(connections).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('accepts a page whose envelope breaks off after a whole `data`', async () => {
    const { client: c } = await serve({ status: 200, raw: '{"data": [ {"id": "e-1"} ], "pagination": oops' });
    expect((await readActivityPage(c, page())).entries).toEqual([{ id: 'e-1' }]);
  });

  // @streamparser/json's tokenizer was about 4% of a 2,000-tenant daemon's CPU for pages of an
  // entry or none; the simulator and most servers declare Content-Length.
  it('parses a small page whose length is declared whole, and streams one sent in chunks', async () => {
    const write = vi.spyOn(JSONParser.prototype, 'write');
    const server = createServer((req, res) => {
      if (req.url?.includes('/careers/declared/')) {
        const text = JSON.stringify({ data: [{ id: 'e-1' }], pagination: {} });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[{"id":"e-2"}]');
      res.end('}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const c = clientFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, new RecordingGate());
      expect((await readActivityPage(c, page({ objectId: 'declared' }))).entries).toEqual([{ id: 'e-1' }]);
      expect(write).not.toHaveBeenCalled();
      expect((await readActivityPage(c, page({ objectId: 'chunked' }))).entries).toEqual([{ id: 'e-2' }]);
      expect(write).toHaveBeenCalled();
    } finally {
      write.mockRestore();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it.each([
    [
      'more entries than the limit',
      JSON.stringify({ data: Array.from({ length: 11 }, (_, i) => ({ id: `e-${i}` })) }),
      'holds more than the 10 entries',
    ],
    ['no data array', '{"data":{"items":[]}}', 'has no "data" array'],
    ['a body that is not JSON', '{"data": [ {"id": "e-1"}, oops', 'is not JSON'],
    ['an envelope that breaks off after a whole `data`', '{"data": [ {"id": "e-1"} ], "pagination": oops', undefined],
  ])('judges a small declared page with %s as the stream parser does', async (_what, text, refusal) => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const c = clientFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, new RecordingGate());
      if (refusal === undefined)
        expect((await readActivityPage(c, page({ limit: 10 }))).entries).toEqual([{ id: 'e-1' }]);
      else {
        const error = (await rejection(c, page({ limit: 10 }))) as ApiError;
        expect(error.code).toBe('API_MALFORMED_RESPONSE');
        expect(error.message).toContain(refusal);
      }
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  // The whole-page parse must judge a hostile page exactly as the stream parser does: the same
  // bytes are served once with Content-Length (parsed whole) and once chunked (streamed).
  it.each([
    ['two `data` keys', Buffer.from('{"data":[{"id":"e-1"}],"data":[{"id":"e-2"},{"id":"e-3"}]}')],
    ['a second `data` key spelled with escapes', Buffer.from('{"data":[{"id":"e-1"}],"d\\u0061ta":[]}')],
    [
      'invalid UTF-8 inside a string',
      Buffer.concat([Buffer.from('{"data":[{"id":"e-1'), Buffer.from([0xff, 0xc3]), Buffer.from('"}]}')]),
    ],
    ['a byte-order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"data":[{"id":"e-1"}]}')])],
    ['`__proto__` in an entry', Buffer.from('{"data":[{"id":"e-1","__proto__":{"event":"x"}}]}')],
    ['`__proto__` holding the envelope', Buffer.from('{"__proto__":{"data":[{"id":"e-1"}]}}')],
    ['a duplicate key in an entry', Buffer.from('{"data":[{"id":"e-1","id":"e-2"}]}')],
    ['numbers beyond a double', Buffer.from('{"data":[{"id":"e-1","n":1e400,"m":123456789012345678901234567890}]}')],
    ['deep nesting after `data`', Buffer.from(`{"data":[{"id":"e-1"}],"x":${'['.repeat(5000)}${']'.repeat(5000)}}`)],
    ['a second value after the envelope', Buffer.from('{"data":[{"id":"e-1"}]}{"data":[]}')],
  ])('judges a small page with %s the same whether its length is declared or it streams', async (_what, bytes) => {
    const server = createServer((req, res) => {
      if (req.url?.includes('/careers/declared/')) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': bytes.length });
        res.end(bytes);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(bytes);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const outcome = (c: ServiceClient, objectId: string) =>
      readActivityPage(c, page({ objectId, limit: 10 })).then(
        (read) => ({ entries: read.entries, quarantined: read.quarantined.length }),
        (error: ApiError) => ({ code: error.code }),
      );
    try {
      const c = clientFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, new RecordingGate());
      expect(await outcome(c, 'declared')).toEqual(await outcome(c, 'chunked'));
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  // A Content-Length that promises more than the connection brings: the stream parser accepts a
  // page cut off after a whole `data`, so a page parsed whole must too, and refuse one cut before.
  it.each([
    ['after a whole `data`', '{"data":[{"id":"e-1"}],"pagination":{"lim'],
    ['inside `data`', '{"data":[{"id":"e-1"},{"id":"e-'],
  ])('judges a small page whose connection ends %s as a streamed one', async (_what, text) => {
    const server = createNetServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', (request) => {
        const declared = request.toString('latin1').includes('/careers/declared/');
        const head = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${
          declared ? 'content-length: 4000' : 'transfer-encoding: chunked'
        }\r\n\r\n`;
        const body = declared ? text : `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
        socket.end(head + body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const outcome = (c: ServiceClient, objectId: string) =>
      readActivityPage(c, page({ objectId, limit: 10 })).then(
        (read) => ({ entries: read.entries }),
        (error: ApiError) => ({ code: error.code }),
      );
    try {
      const c = clientFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, new RecordingGate());
      const streamed = await outcome(c, 'chunked');
      expect(streamed).toEqual(
        text.includes('"pagination"') ? { entries: [{ id: 'e-1' }] } : { code: 'API_MALFORMED_RESPONSE' },
      );
      expect(await outcome(c, 'declared')).toEqual(streamed);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('reads a body that is not JSON as API_MALFORMED_RESPONSE', async () => {
    const { client: c } = await serve({ status: 200, raw: '{"data": [ {"id": "e-1"}, oops' });
    expect(((await rejection(c, page())) as ApiError).code).toBe('API_MALFORMED_RESPONSE');
  });
});
