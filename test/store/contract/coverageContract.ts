import { describe, expect, it } from 'vitest';
import { LOG_KINDS, type LogKind } from '../../../src/logs.js';
import type { ChangefeedStore } from '../../../src/store/changefeedStore.js';
import type { LogKindCoverage, WatchedLog, WatchStatus } from '../../../src/store/storeRecords.js';
import type { OpenEngine } from '../storeContract.suite.js';
import { ingest, T } from './storeFixtures.js';

/**
 * WatchedLogStore.coverage: per kind, the gaps and the oldest active cursor, as /metrics shows them.
 * Tenants asked at once (a scrape asks all of them in one turn, which PostgreSQL answers with one
 * statement for all) each get their own counts, never another's.
 */
export function defineCoverageContract(openEngine: OpenEngine): void {
  describe('watched-log coverage', () => {
    it("counts each tenant's gaps and oldest active cursor per kind, for tenants asked at once", async () => {
      const backend = await openEngine().open();
      const tenants: ChangefeedStore[] = [];
      // Tenant i: i + 1 active careers, cursors from T + 10 * (i + 1); i careers gone, with older
      // cursors that must not count; a skill without a cursor yet.
      for (let i = 0; i < 3; i++) {
        const store = await backend.tenantStore(`tenant-${i}`);
        await store.sinks.activate([{ name: 'a', type: 'file' }], T);
        const careers = Array.from({ length: i + 1 }, (_, c) => `c-${c}`);
        const gone = Array.from({ length: i }, (_, g) => `gone-${g}`);
        await store.watchedLogs.registerAll([
          ...[...careers, ...gone].map((objectId) => ({
            log: 'career' as const,
            objectId,
            origin: 'config' as const,
            coverageStart: T - 1_000,
            now: T,
          })),
          { log: 'skill', objectId: 's-1', origin: 'config', coverageStart: T, now: T },
        ]);
        for (const [c, objectId] of careers.entries())
          await ingest(store, [], { objectId, windowEnd: T + 10 * (i + 1) + c });
        for (const objectId of gone) await store.watchedLogs.setStatus('career', objectId, 'gone', 'x');
        tenants.push(store);
      }
      // The last tenant's first career fails: a gap, its cursor still the oldest active one.
      await tenants[2]!.watchedLogs.recordFailure('career', 'c-0', 'x', T);

      const answers = await Promise.all(tenants.map((store) => store.watchedLogs.coverage()));
      expect(answers).toEqual([
        [
          { log: 'career', gaps: 0, oldestActiveWindowEnd: T + 10 },
          { log: 'skill', gaps: 0, oldestActiveWindowEnd: null },
        ],
        [
          { log: 'career', gaps: 1, oldestActiveWindowEnd: T + 20 },
          { log: 'skill', gaps: 0, oldestActiveWindowEnd: null },
        ],
        [
          { log: 'career', gaps: 3, oldestActiveWindowEnd: T + 30 },
          { log: 'skill', gaps: 0, oldestActiveWindowEnd: null },
        ],
      ]);
    });

    it("answers what the tenant's own rows say, for every status, failure and cursor, tenants' names prefixes of each other", async () => {
      const backend = await openEngine().open();
      const stores: ChangefeedStore[] = [];
      for (const [t, tenant] of ['acme', 'acme-1', 'acme-10', 'acme1'].entries()) {
        const store = await backend.tenantStore(tenant);
        // Each tenant watches another subset of every kind x status x failures x cursor, cursors
        // its own: a tenant answered with another's rows, or a case counted wrongly, shows.
        const logs: {
          log: LogKind;
          objectId: string;
          status: WatchStatus;
          failures: number;
          read: boolean;
        }[] = [];
        let n = 0;
        for (const log of LOG_KINDS)
          for (const status of ['active', 'disabled', 'gone'] as const)
            for (const failures of [0, 1, 2])
              for (const read of [false, true])
                if ((n++ + t) % 4 !== 0)
                  logs.push({ log, objectId: `${status}-${failures}-${read}`, status, failures, read });
        await store.watchedLogs.registerAll(
          logs.map(({ log, objectId }, i) => ({
            log,
            objectId,
            origin: 'config' as const,
            coverageStart: T - 1_000 * (t + 1) - i,
            now: T,
          })),
        );
        for (const [i, w] of logs.entries()) {
          if (w.read) await ingest(store, [], { log: w.log, objectId: w.objectId, windowEnd: T + 100 * t - i });
          for (let f = 0; f < w.failures; f++) await store.watchedLogs.recordFailure(w.log, w.objectId, 'x', T);
          if (w.status !== 'active') await store.watchedLogs.setStatus(w.log, w.objectId, w.status, 'x');
        }
        stores.push(store);
      }

      const answers = await Promise.all(stores.map((store) => store.watchedLogs.coverage()));
      const expected = await Promise.all(stores.map(async (store) => coverageOfRows(await store.watchedLogs.list())));
      expect(answers).toEqual(expected);
      // Every tenant's own, not one answer four times.
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(4);
    });

    it('leaves out the cursors of logs not active, and kinds not watched', async () => {
      const store = await openEngine().openStore();
      await store.watchedLogs.registerAll([
        { log: 'career', objectId: 'old', origin: 'config', coverageStart: T - 5_000, now: T },
        { log: 'career', objectId: 'new', origin: 'config', coverageStart: T, now: T },
      ]);
      await store.watchedLogs.setStatus('career', 'old', 'disabled', 'missing scope');
      expect(await store.watchedLogs.coverage()).toEqual([{ log: 'career', gaps: 1, oldestActiveWindowEnd: T }]);
    });
  });
}

/** What /metrics showed of a tenant's watched logs when it read their rows: the rule coverage() counts by. */
function coverageOfRows(rows: readonly WatchedLog[]): LogKindCoverage[] {
  const byKind = new Map<string, LogKindCoverage>();
  for (const w of rows) {
    const kind = byKind.get(w.log) ?? { log: w.log, gaps: 0, oldestActiveWindowEnd: null };
    if (w.status !== 'active' || w.consecutiveFailures > 0) kind.gaps += 1;
    if (w.status === 'active' && w.windowEnd !== null)
      kind.oldestActiveWindowEnd = Math.min(kind.oldestActiveWindowEnd ?? Number.POSITIVE_INFINITY, w.windowEnd);
    byKind.set(w.log, kind);
  }
  return [...byKind.values()].sort((a, b) => (a.log < b.log ? -1 : a.log > b.log ? 1 : 0));
}
