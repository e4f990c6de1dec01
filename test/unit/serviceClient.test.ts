import { setMaxListeners } from 'node:events';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ApiProblemError, ApiTransportError, type ApiError } from '../../src/api/apiErrors.js';
import { activityPageReader } from '../../src/api/activityPageBody.js';
import type { ServiceClient } from '../../src/api/serviceClient.js';
import { isAbortError } from '../../src/errors.js';
import {
  CLIENT_NOW,
  LoopbackService,
  RecordingGate,
  TEST_KEY,
  clientFor,
  problem,
  type CannedReply,
} from './loopbackService.js';

async function serve(
  reply: CannedReply,
  options: { credentialSource?: string; timeoutMs?: number; basePath?: string } = {},
) {
  const service = await LoopbackService.start(() => reply);
  const gate = new RecordingGate();
  const client = clientFor(`${service.url}${options.basePath ?? ''}`, gate, options);
  return { gate, client, service };
}

/** The ApiError a GET fails with; fails the test when the GET succeeds. */
async function failure(c: ServiceClient, path = '/api/v1/careers/c-1/activity'): Promise<ApiError> {
  try {
    await c.getJson(path, { limit: 10 }, 'poll');
  } catch (error) {
    return error as ApiError;
  }
  throw new Error('expected the request to fail');
}

describe('ServiceClient.getJson', () => {
  it('sends the key as a bearer token with the query, and reports the response to the gate', async () => {
    const {
      gate,
      client: c,
      service: s,
    } = await serve(
      {
        status: 200,
        headers: { 'x-request-id': 'req-ok', 'ratelimit-remaining': '42' },
        body: { data: [{ id: 'e-1' }] },
      },
      { basePath: '/tenant-a/' },
    );
    const res = await c.getJson(
      '/api/v1/skills/s%201/activity',
      { limit: 5, offset: 0, event: undefined },
      'discovery',
    );
    expect(res.body).toEqual({ data: [{ id: 'e-1' }] });
    expect(res.meta).toMatchObject({ status: 200, requestId: 'req-ok', remaining: 42, receivedAt: CLIENT_NOW });
    const [request] = s.requests;
    expect(request?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(request?.headers.accept).toBe('application/json');
    expect(request?.url.pathname).toBe('/tenant-a/api/v1/skills/s%201/activity');
    expect([...request!.url.searchParams]).toEqual([
      ['limit', '5'],
      ['offset', '0'],
    ]);
    expect(gate.acquired).toEqual(['discovery']);
    expect(gate.observed.map((m) => m.requestId)).toEqual(['req-ok']);
  });

  it('maps 401 to API_INVALID_CREDENTIAL naming where the key came from, never the key', async () => {
    const { client: c } = await serve(problem(401, 'invalid-credential'), {
      credentialSource: 'the key file /run/secrets/key (api.apiKeyFile)',
    });
    const error = await failure(c);
    expect(error).toBeInstanceOf(ApiProblemError);
    expect(error.code).toBe('API_INVALID_CREDENTIAL');
    expect(error.message).toContain('check the key file /run/secrets/key (api.apiKeyFile)');
    expect(error.message).not.toContain(TEST_KEY);
    expect(error.requestId).toBe('req-401');
    expect((error as ApiProblemError).status).toBe(401);
  });

  it('tells a missing scope, missing permissions and an expired trial apart on 403', async () => {
    const served1 = await serve(problem(403, 'insufficient-scope'));
    const scope = await failure(served1.client);
    expect(scope.code).toBe('API_INSUFFICIENT_SCOPE');
    expect(scope.message).toContain('lacks the scope to read /api/v1/careers/c-1/activity');

    const served2 = await serve(problem(403, 'insufficient-permissions'));
    expect((await failure(served2.client)).code).toBe('API_INSUFFICIENT_PERMISSIONS');

    const served3 = await serve(
      problem(403, 'forbidden', { error: 'trial_expired', upgrade_url: 'https://svc.example/upgrade' }),
    );
    const trial = await failure(served3.client);
    expect(trial.code).toBe('API_TRIAL_EXPIRED');
    expect(trial.message).toContain('upgrade at https://svc.example/upgrade');
  });

  it('maps 404 to API_NOT_FOUND', async () => {
    const { client: c } = await serve(problem(404, 'not-found'));
    const error = await failure(c);
    expect(error.code).toBe('API_NOT_FOUND');
    expect(error.path).toBe('/api/v1/careers/c-1/activity');
  });

  it('puts the field errors of a 400 in the message', async () => {
    const { client: c } = await serve(
      problem(400, 'validation-error', {
        errors: [{ field: 'from', code: 'invalid_timestamp', message: 'not ISO 8601' }],
      }),
    );
    const error = await failure(c);
    expect(error.code).toBe('API_VALIDATION');
    expect(error.message).toContain('from: invalid_timestamp (not ISO 8601)');
    expect((error as ApiProblemError).problem.errors).toHaveLength(1);
  });

  it('maps 429 to API_RATE_LIMITED with Retry-After, and lets the gate see it', async () => {
    const reply = problem(429, 'rate-limit-exceeded');
    const { gate, client: c } = await serve({
      ...reply,
      headers: { ...reply.headers, 'retry-after': '120', 'ratelimit-remaining': '0' },
    });
    const error = (await failure(c)) as ApiProblemError;
    expect(error.code).toBe('API_RATE_LIMITED');
    expect(error.retryAfterSeconds).toBe(120);
    expect(error.message).toContain('retry after 120 s');
    expect(gate.observed).toMatchObject([{ status: 429, retryAfterSeconds: 120, remaining: 0 }]);
  });

  it('maps 5xx to API_SERVER_ERROR, with an excerpt when a proxy answers in HTML', async () => {
    const served4 = await serve(problem(503, 'internal-error'));
    const problemError = await failure(served4.client);
    expect(problemError.code).toBe('API_SERVER_ERROR');
    expect(problemError.message).toContain('failed with 503: detail of internal-error');

    const served5 = await serve({
      status: 502,
      headers: { 'content-type': 'text/html' },
      raw: '<html><h1>Bad Gateway</h1></html>',
    });
    const html = await failure(served5.client);
    expect(html.code).toBe('API_SERVER_ERROR');
    expect(html.message).toContain('non-problem body: <html><h1>Bad Gateway</h1></html>');
    expect(html.requestId).toBeUndefined();
  });

  it('maps a status the spec does not list to API_HTTP_ERROR', async () => {
    const { client: c } = await serve(problem(418, 'teapot'));
    expect((await failure(c)).code).toBe('API_HTTP_ERROR');
  });

  it('takes the request id from the problem body when the header is missing', async () => {
    const reply = problem(500, 'internal-error');
    const { client: c } = await serve({ ...reply, headers: { 'content-type': 'application/problem+json' } });
    const error = await failure(c);
    expect(error.requestId).toBe('req-500');
    expect(error.message).toContain('(request req-500)');
  });

  it('reports a 200 that is not JSON as API_MALFORMED_RESPONSE with the request id', async () => {
    const { client: c } = await serve({
      status: 200,
      headers: { 'x-request-id': 'req-html' },
      raw: '<html>maintenance</html>',
    });
    const error = await failure(c);
    expect(error.code).toBe('API_MALFORMED_RESPONSE');
    expect(error.requestId).toBe('req-html');
    expect(error.message).toContain('is not JSON (request req-html)');
  });

  it('gives up on a service that does not answer with API_TIMEOUT', async () => {
    const { client: c } = await serve('hang', { timeoutMs: 100 });
    const error = await failure(c);
    expect(error).toBeInstanceOf(ApiTransportError);
    expect(error.code).toBe('API_TIMEOUT');
    expect(error.message).toContain('timed out after 100 ms');
  });

  // undici is handed an EventEmitter as the exchange's signal: its time limit must still end a body
  // that stalls (on the whole-page read and the streamed one) and close the connection, and many
  // exchanges in flight under one caller's signal must warn of no listener leak.
  it('ends stalled bodies at the time limit and frees their connections, warning of no leak', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    let open = 0;
    const closed: Promise<void>[] = [];
    const sockets: Socket[] = [];
    const server = createServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => undefined);
      socket.once('data', (request) => {
        open++;
        closed.push(new Promise<void>((resolve) => socket.on('close', () => resolve())));

        const declared = request.toString('latin1').includes('/declared');
        socket.write(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${
            declared ? 'content-length: 4000\r\n\r\n{"data":[' : 'transfer-encoding: chunked\r\n\r\n9\r\n{"data":[\r\n'
          }`,
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const c = clientFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, new RecordingGate(), {
        timeoutMs: 200,
      });
      // The caller's signal is the daemon's, which raises its limit for what it runs (pollLoop.ts).
      const caller = new AbortController();
      setMaxListeners(100, caller.signal);
      // On a loaded machine an exchange can reach its limit before its request reached the server
      // (run 1 of the flake hunt: 3 of 40 at load 13 to 30): more are sent until 40 stalled there.
      const errors: (ApiError | undefined)[] = [];
      let sent = 0;
      while (open < 40) {
        errors.push(
          ...(await Promise.all(
            Array.from({ length: 40 - open }, () => {
              const i = sent++;
              return c
                .getJson(
                  `/api/v1/${i % 2 ? 'declared' : 'chunked'}/${i}`,
                  {},
                  'poll',
                  caller.signal,
                  activityPageReader(10),
                )
                .then(
                  () => undefined,
                  (error: ApiError) => error,
                );
            }),
          )),
        );
      }
      expect(errors.map((error) => error?.code)).toEqual(Array.from({ length: sent }, () => 'API_TIMEOUT'));
      // Every connection that carried a stalled exchange is closed, not returned to the pool (one
      // left open keeps this wait, and so the test, from ending).
      const stalled = open;
      await Promise.all(closed);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => warning.message)).toEqual([]);
      // A shutdown while the bodies stall is passed through as the abort it is.
      const slow = clientFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, new RecordingGate());
      const pending = Array.from({ length: 10 }, (_, i) =>
        slow
          .getJson(`/api/v1/${i % 2 ? 'declared' : 'chunked'}/${i}`, {}, 'poll', caller.signal, activityPageReader(10))
          .then(
            () => undefined,
            (error: unknown) => error,
          ),
      );
      while (open < stalled + 10) await new Promise((resolve) => setImmediate(resolve));
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
      caller.abort();
      for (const error of await Promise.all(pending)) {
        expect(isAbortError(error)).toBe(true);
        expect(error).not.toBeInstanceOf(ApiTransportError);
      }
    } finally {
      process.off('warning', onWarning);
      // The pool also holds idle connections it opened beside the stalled ones (as before mem7).
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('reports a refused connection as API_CONNECTION', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const client = clientFor(`http://127.0.0.1:${port}`, new RecordingGate());
    const error = await failure(client);
    expect(error.code).toBe('API_CONNECTION');
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('passes a shutdown abort through instead of calling it a timeout', async () => {
    const { client: c, service: s } = await serve('hang');
    const controller = new AbortController();
    const pending = c.getJson('/api/v1/ping', {}, 'poll', controller.signal);
    while (s.requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    const error = await pending.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAbortError(error)).toBe(true);
    expect(error).not.toBeInstanceOf(ApiTransportError);
  });
});
