import { request, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { makeTempDir } from '../support/tempDir.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

const EVENTS = 50_000;

/** A store of EVENTS journal events, every delivery of sink `a` dead: seeded in one statement each. */
function seededStore(): SqliteChangefeedStore {
  const store = openSqliteStoreFile(join(makeTempDir(), 'changefeed.db'));
  store.db.exec(`
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${EVENTS})
    INSERT INTO events (tenant, seq, event_id, log, object_id, type, performed_at, ingested_at, payload)
    SELECT '${store.tenant}', i, 'ev-' || i, 'career', 'c-1', 'com.test.career.level_added', NULL, i, '{}' FROM n;
    INSERT INTO journal_heads (tenant, head) VALUES ('${store.tenant}', ${EVENTS});
    INSERT INTO deliveries (tenant, sink, seq, state, attempts, updated_at)
    SELECT tenant, 'a', seq, 'dead', 3, 1 FROM events;`);
  return store;
}

/**
 * What happened first: `work` ending, or a request to a loopback server (a health probe) sent as
 * it started being answered. Also how many event loop turns ran while `work` did. Order, not time.
 */
async function racedWithProbe(
  work: () => Promise<number>,
): Promise<{ order: string[]; turns: number; result: number }> {
  const server: Server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const order: string[] = [];
  let turns = 0;
  let running = true;
  const turn = () => {
    if (!running) return;
    turns++;
    setImmediate(turn);
  };
  try {
    const probe = new Promise<void>((resolve, reject) => {
      const { port } = server.address() as AddressInfo;
      request({ port, host: '127.0.0.1', path: '/healthz', agent: false }, (res) => {
        res.resume();
        res.on('end', () => {
          order.push('probe answered');
          resolve();
        });
      })
        .on('error', reject)
        .end();
    });
    setImmediate(turn);
    const result = await work();
    running = false;
    order.push('work done');
    await probe;
    return { order, turns, result };
  } finally {
    running = false;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe('long console writes on SQLite leave the event loop free', () => {
  const stores: SqliteChangefeedStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });
  const open = () => {
    const store = seededStore();
    stores.push(store);
    return store;
  };

  it(`answers a health probe while a replay of ${EVENTS} events is being queued`, async () => {
    const store = open();
    const raced = await racedWithProbe(() => store.outbox.enqueueFromJournal('a', {}, 2));
    expect(raced.result).toBe(EVENTS);
    expect(raced.order).toEqual(['probe answered', 'work done']);
    expect(raced.turns).toBeGreaterThanOrEqual(EVENTS / 1_000 - 1);
  });

  it(`answers a health probe while ${EVENTS} dead letters are put back in line`, async () => {
    const store = open();
    const raced = await racedWithProbe(() => store.deadLetters.requeueSink('a', 2));
    expect(raced.result).toBe(EVENTS);
    expect(raced.order).toEqual(['probe answered', 'work done']);
    expect(raced.turns).toBeGreaterThanOrEqual(EVENTS / 1_000 - 1);
  });

  it(`lets the event loop turn while ${EVENTS} events are counted for a replay`, async () => {
    const store = open();
    const raced = await racedWithProbe(() => store.outbox.countFromJournal({ type: 'com.test.*' }));
    expect(raced.result).toBe(EVENTS);
    expect(raced.turns).toBeGreaterThanOrEqual(2);
  });
});
