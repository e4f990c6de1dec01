import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { SinkEndpointFailingError, SinkPartialFailureError } from '../../src/sinkContract/sinkErrors.js';
import { createSink, sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

async function receiver(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
}

const event: OutboundEvent = {
  seq: 1,
  tenant: 'default',
  id: 'ev-1',
  type: 't',
  log: 'career',
  objectId: 'c',
  orderingKey: 'career:c',
  json: '{"id":"ev-1"}',
  attempt: 1,
};

async function writeOnce(url: string, timeoutMs = 1_000): Promise<{ ms: number; error?: unknown }> {
  const sink = createSink(sinkConfigSchema.parse({ name: 'hook', type: 'webhook', url, timeoutMs }));
  const signal = new AbortController().signal;
  await sink.connect(signal);
  const started = performance.now();
  try {
    await sink.write([event], signal);
    return { ms: performance.now() - started };
  } catch (error) {
    return { ms: performance.now() - started, error };
  } finally {
    await sink.close();
  }
}

/** Writes a little of an endless body every 50 ms, for ever. */
const drip = (status: number) => (_req: unknown, res: ServerResponse) => {
  res.writeHead(status, { 'content-type': 'text/plain' });
  const timer = setInterval(() => res.write('.'), 50);
  res.on('close', () => clearInterval(timer));
};

// A receiver that answered and then dripped or never ended its body blocked the sink for ever:
// the pool's body timeout restarts with every byte.
describe('a hostile webhook receiver', () => {
  it('a 200 whose body never ends is a delivery: the status decides, the body is not read', async () => {
    const result = await writeOnce(await receiver(drip(200)));
    expect(result.error).toBeUndefined();
  });

  it('a 422 whose body drips for ever is a failed attempt within timeoutMs, with the snippet it sent', async () => {
    const result = await writeOnce(await receiver(drip(422)), 1_000);
    expect(result.error).toBeInstanceOf(SinkPartialFailureError);
    const failure = (result.error as SinkPartialFailureError).failures.get('ev-1');
    expect(failure).toMatchObject({ error: 'HTTP 422', permanent: true, status: 422 });
    expect(failure?.response).toMatch(/^\.+$/);
  });

  it('an endless body is read up to the cap and no further', async () => {
    let written = 0;
    const url = await receiver((_req, res) => {
      res.writeHead(400);
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = (): void => {
        while (written < 10_000) {
          written++;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('error', () => undefined);
      pump();
    });
    const result = await writeOnce(url, 5_000);
    const failure = (result.error as SinkPartialFailureError).failures.get('ev-1');
    expect(failure?.status).toBe(400);
    expect(written).toBeLessThan(10_000);
  });

  it('a redirect is named with the start of its Location, quoted: a long or odd one reaches no message whole', async () => {
    // Latin-1 on the wire: U+0085 (NEL) and U+009B (CSI) are single bytes a terminal may act on.
    const location = `http://elsewhere.example/\u0085\u009b2J${'a'.repeat(15_000)}`;
    const url = await receiver((_req, res) => res.writeHead(302, { location }).end());
    const result = await writeOnce(url);
    expect(result.error).toBeInstanceOf(SinkEndpointFailingError);
    const message = (result.error as Error).message;
    expect(message).toContain('HTTP 302 (redirect to "http://elsewhere.example/\\u0085\\u009b2Jaaa');
    expect(message).toContain('(cut) not followed)');
    expect(message).not.toMatch(/[\u0080-\u009f]/);
    expect(message.length).toBeLessThan(500);
  });

  it('headers that never come are the endpoint failing after timeoutMs', async () => {
    const result = await writeOnce(await receiver(() => undefined), 800);
    expect(result.error).toBeInstanceOf(SinkEndpointFailingError);
    expect((result.error as SinkEndpointFailingError).failure).toEqual({ cause: 'timeout' });
    expect((result.error as Error).message).toMatch(/: no complete answer within timeoutMs \(800 ms\)$/);
  });
});
