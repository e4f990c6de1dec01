import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiError } from '../../src/api/apiErrors.js';
import type { ServiceClient } from '../../src/api/serviceClient.js';
import { LoopbackService, RecordingGate, TEST_KEY, clientFor, problem } from './loopbackService.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

async function failure(c: ServiceClient): Promise<ApiError> {
  try {
    await c.getJson('/api/v1/careers/c-1/activity', { limit: 10 }, 'poll');
  } catch (error) {
    return error as ApiError;
  }
  throw new Error('expected the request to fail');
}

/** A server that streams `chunks` chunks of 1 MiB of JSON-looking bytes, counting what it managed to send. */
async function endlessBody(chunks: number, withLength: boolean): Promise<{ url: string; sent: () => number }> {
  let sent = 0;
  const chunk = Buffer.alloc(1024 * 1024, 'a');
  const server = createServer((_req, res) => {
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(withLength ? { 'content-length': String(chunks * chunk.length + 9) } : {}),
    });
    res.write('{"data":"');
    const pump = (): void => {
      while (sent < chunks) {
        sent++;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      res.end('"}');
    };
    res.on('error', () => undefined);
    pump();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent: () => sent };
}

// A 200 MB answer peaked at 2.19 GB RSS: the body was read whole before anything was checked.
describe('a service answer larger than api.maxResponseBytes', () => {
  it('stops reading at the cap with API_RESPONSE_TOO_LARGE, and the gate still sees the response', async () => {
    const body = await endlessBody(200, false);
    const gate = new RecordingGate();
    const error = await failure(clientFor(body.url, gate, { maxResponseBytes: 4 * 1024 * 1024 }));
    expect(error.code).toBe('API_RESPONSE_TOO_LARGE');
    expect(error.message).toContain('larger than api.maxResponseBytes (4194304)');
    expect(gate.observed).toHaveLength(1);
    expect(body.sent()).toBeLessThan(200);
  });

  it('refuses a declared Content-Length above the cap before reading the body', async () => {
    const body = await endlessBody(20, true);
    const error = await failure(clientFor(body.url, new RecordingGate(), { maxResponseBytes: 4 * 1024 * 1024 }));
    expect(error.code).toBe('API_RESPONSE_TOO_LARGE');
    expect(error.message).toContain('declares 20971529 bytes');
  });
});

// A problem document whose detail echoed the bearer token put the full key into status and the
// stored last_error.
describe('a problem document that echoes the key', () => {
  it.each([
    ['as sent', `invalid token Bearer ${TEST_KEY}`],
    ['URL-encoded', `token=${encodeURIComponent(TEST_KEY)}`],
    ['base64', `basic ${Buffer.from(TEST_KEY).toString('base64')}`],
  ])('keeps it out of the error message (%s)', async (_form, detail) => {
    const service = await LoopbackService.start(() => ({ ...problem(400, 'validation-error', { detail }) }));
    const error = await failure(clientFor(service.url, new RecordingGate()));
    expect(error.message).not.toContain(TEST_KEY);
    expect(error.message).not.toContain(Buffer.from(TEST_KEY).toString('base64'));
    expect(JSON.stringify(error)).not.toContain(TEST_KEY);
  });
});

// X-Request-Id was quoted as sent in every error, log line and quarantine record of its answer:
// up to undici's 16 KiB of header, C1 controls (one latin1 byte each) included, which a terminal
// running `status` acts on.
describe('a request id the service sends', () => {
  const longId = `req-${'r'.repeat(10_000)}`;

  it('in X-Request-Id: quoted cut to 200 characters, its control characters escaped', async () => {
    const service = await LoopbackService.start(() => {
      const answer = problem(400, 'validation-error');
      return { ...answer, headers: { ...answer.headers, 'x-request-id': `\u009b2J${longId}` } };
    });
    const error = await failure(clientFor(service.url, new RecordingGate()));
    expect(error.requestId).toBe(`\\u009b2J${longId.slice(0, 197)}... (cut)`);
    expect(error.message).toContain(`(request \\u009b2Jreq-rrr`);
    expect(error.message.length).toBeLessThan(600);
    expect(error.message).not.toContain('\u009b');
  });

  it("in a problem document's requestId: the same", async () => {
    const service = await LoopbackService.start(() => {
      const answer = problem(400, 'validation-error', { requestId: `\u001b[2J${longId}` });
      const { 'x-request-id': _dropped, ...headers } = answer.headers;
      return { ...answer, headers };
    });
    const error = await failure(clientFor(service.url, new RecordingGate()));
    expect(error.message).toContain(`(request \\u001b[2Jreq-rrr`);
    expect(error.message.length).toBeLessThan(600);
    expect(error.message).not.toContain('\u001b');
  });

  // An empty X-Request-Id was kept as an id: "(request )", and it stood in for the problem
  // document's requestId, the one id the answer did carry.
  it.each([
    ['an empty header, the id in the problem document', 'req_in_body', '(request req_in_body)'],
    ['an empty header and an empty requestId', '', '(request without id)'],
  ])('an empty id is no id (%s)', async (_case, bodyId, quoted) => {
    const service = await LoopbackService.start(() => {
      const answer = problem(400, 'validation-error', { requestId: bodyId });
      return { ...answer, headers: { ...answer.headers, 'x-request-id': '' } };
    });
    const error = await failure(clientFor(service.url, new RecordingGate()));
    expect(error.requestId).toBe(bodyId === '' ? undefined : bodyId);
    expect(error.message).toContain(quoted);
  });
});
