import type pg from 'pg';
import { afterAll } from 'vitest';
import { connectPostgres, dropSchema, POSTGRES_PORT } from '../support/postgresAdmin.js';
import { runSinkConformance, type ConformanceReader, type ReadMessage } from './conformance.js';

let admin: pg.Client | undefined;

afterAll(async () => {
  await admin?.end();
});

runSinkConformance({
  type: 'postgres',
  brokerPort: POSTGRES_PORT,
  connectionOriented: true,
  tenantHeader: 'tenant',
  // Rows of one object are committed one batch after the other (the engine never writes two
  // batches of an object at once); within a batch they are one transaction. Read in commit order
  // (ingested_at is the transaction's start), then by event time within a transaction.
  cases: { readBack: true, orderedReadBack: true, dropConnections: true, downAtStart: true },
  timeouts: (ms) => ({ connectTimeoutMs: ms, timeoutMs: ms }),
  async unavailable() {
    const connected = await connectPostgres();
    if ('reason' in connected) return connected.reason;
    admin = connected.client;
    return undefined;
  },
  // Each test writes to a table in a schema of its own, dropped after the test.
  sinkConfig: ({ name, tag, port }) => ({
    name,
    type: 'postgres',
    url: `postgres://postgres@127.0.0.1:${port}/test`,
    table: `${tag}.changefeed_events`,
    connectTimeoutMs: 2_000,
    timeoutMs: 5_000,
  }),
  async openReader({ tag }): Promise<ConformanceReader> {
    const connected = await connectPostgres();
    if ('reason' in connected) throw new Error(connected.reason);
    const client = connected.client;
    const messages: ReadMessage[] = [];
    const ids = new Set<string>();
    const poll = async (): Promise<void> => {
      const result = await client
        .query<{ id: string; event: string; type: string; log: string; tenant: string }>(
          `SELECT id, event::text AS event, type, log, tenant FROM "${tag}".changefeed_events ORDER BY ingested_at, time, id`,
        )
        .catch((error: { code?: string }) => {
          if (error.code === '42P01' || error.code === '3F000') return { rows: [] };
          throw error;
        });
      for (const row of result.rows) {
        if (ids.has(row.id)) continue;
        ids.add(row.id);
        messages.push({ id: row.id, body: row.event, headers: { type: row.type, log: row.log, tenant: row.tenant } });
      }
    };
    return {
      async waitFor(count, timeoutMs) {
        const until = Date.now() + timeoutMs;
        for (;;) {
          await poll();
          if (ids.size >= count || Date.now() >= until) return [...messages];
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      },
      close: () => client.end(),
    };
  },
  async cleanup(tag) {
    if (admin) await dropSchema(admin, tag);
  },
});
