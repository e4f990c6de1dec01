import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import type { TestPki } from '../../support/testPki.js';
import { pkiUnavailable, testPki } from '../../support/testPki.js';
import { missingBinary } from '../../support/requiredBinary.js';
import { startRedisTls } from '../../support/tlsServers.js';
import type { ConformanceReader, ConformanceTarget, ReadMessage } from '../conformance.js';

/** The machine's Redis; with `tls`, a second redis-server of the test's own, TLS only. */
const PLAIN_PORT = 6379;

/** Every stream key of a test: the sink's prefix is the tag. */
async function keysOf(client: Redis, tag: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${tag}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** The conformance target of the redis-streams sink, over plain TCP or, with `tls`, over mutual TLS. */
export function redisStreamsTarget(options: { tls?: boolean } = {}): ConformanceTarget {
  let admin: Redis | undefined;
  let pki: TestPki | undefined;
  afterAll(() => admin?.disconnect());

  const connectDirect = async (port: number): Promise<Redis> => {
    const client = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: true,
      retryStrategy: () => null,
      enableOfflineQueue: false,
      connectTimeout: 2_000,
      tls: pki
        ? {
            ca: readFileSync(pki.caFile),
            cert: readFileSync(pki.clientCertFile),
            key: readFileSync(pki.clientKeyFile),
          }
        : undefined,
    });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };

  const target: ConformanceTarget = {
    type: 'redis-streams',
    label: options.tls ? 'redis-streams over TLS (rediss://, client certificate)' : undefined,
    // With TLS, the port of the listener `unavailable` starts.
    brokerPort: options.tls ? 0 : PLAIN_PORT,
    connectionOriented: true,
    // The default key `{prefix}:{log}` puts every event of a log in one stream, in XADD order, and
    // the engine never has two batches of one object in flight: each object's events stay in order.
    tenantHeader: 'tenant',
    cases: { readBack: true, orderedReadBack: true, dropConnections: true, downAtStart: true },
    timeouts: (ms) => ({ connectTimeoutMs: ms, timeoutMs: ms }),
    async unavailable() {
      if (options.tls) {
        const missing = pkiUnavailable() ?? missingBinary('redis-server');
        if (missing) return missing;
        pki = testPki();
        target.brokerPort = (await startRedisTls(pki)).port;
      }
      try {
        admin = await connectDirect(target.brokerPort!);
        await admin.ping();
        return undefined;
      } catch (error) {
        admin?.disconnect();
        admin = undefined;
        return `no Redis at 127.0.0.1:${target.brokerPort}: ${(error as Error).message}`;
      }
    },
    sinkConfig: ({ name, tag, port }) => ({
      name,
      type: 'redis-streams',
      url: `${pki ? 'rediss' : 'redis'}://127.0.0.1:${port}`,
      prefix: tag,
      connectTimeoutMs: 2_000,
      timeoutMs: 5_000,
      ...(pki ? { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile } : {}),
    }),
    async openReader({ tag, port }): Promise<ConformanceReader> {
      // A real consumer: XRANGE over every stream key of the tag, from where it left off in each.
      const client = await connectDirect(port);
      const messages: ReadMessage[] = [];
      const lastIds = new Map<string, string>();
      const ids = new Set<string>();
      const poll = async (): Promise<void> => {
        for (const key of await keysOf(client, tag)) {
          const last = lastIds.get(key);
          const entries = await client.xrange(key, last === undefined ? '-' : `(${last}`, '+', 'COUNT', 10_000);
          for (const [entryId, flat] of entries) {
            const fields: Record<string, string> = {};
            for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
            const { id = '', event = '', ...headers } = fields;
            messages.push({ id, body: event, headers });
            ids.add(id);
            lastIds.set(key, entryId);
          }
        }
      };
      return {
        // Counts distinct events, as a deduplicating consumer would: after a lost connection the
        // re-sent batch brings duplicates, which must not make the wait end before the rest arrived.
        async waitFor(count, timeoutMs) {
          const until = Date.now() + timeoutMs;
          for (;;) {
            await poll();
            if (ids.size >= count || Date.now() >= until) return [...messages];
            await new Promise((resolve) => setTimeout(resolve, 25));
          }
        },
        close: () => {
          client.disconnect();
          return Promise.resolve();
        },
      };
    },
    async cleanup(tag) {
      if (!admin) return;
      const keys = await keysOf(admin, tag);
      if (keys.length > 0) await admin.del(...keys);
    },
  };
  return target;
}
