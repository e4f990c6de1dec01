import { describe, expect, it } from 'vitest';
import type { ChangefeedStore } from '../../../src/store/changefeedStore.js';
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
