import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { AppConfig } from '../../src/config/appConfigSchema.js';
import { eventIdFor } from '../../src/events/eventId.js';
import { storePath } from '../../src/store/sqlite/database.js';
import { runOnce, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

/** A pino logger at info whose lines are kept as written. */
function capturingLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

/** Every value of every `log` column of the store, by table. */
function storedLogNames(stateDir: string): Record<string, string[]> {
  const db = new Database(storePath(stateDir), { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    const byTable: Record<string, string[]> = {};
    for (const table of tables) {
      const columns = db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[];
      if (!columns.includes('log')) continue;
      byTable[table] = db.prepare(`SELECT DISTINCT log FROM "${table}" ORDER BY log`).pluck().all() as string[];
    }
    return byTable;
  } finally {
    db.close();
  }
}

/**
 * A company whose only activity is a burst on the identity-provider log, backfilled from a day
 * ago. With `readsPerSecond` 1 on the injected clock, a burst of 15 pages backfills for long
 * enough to log its progress.
 */
async function backfillIdentityProviderLog(
  watch: Record<string, unknown> = {},
  burstSize = 5,
  readsPerSecond?: number,
) {
  const clock = testClock();
  const simulator = await startTestSimulator({
    clock,
    seed: 26,
    careers: 1,
    skills: 0,
    identityProviderShare: 0,
    eventsPerHour: 0,
    historyHours: 0,
    readsPerHour: 1_000_000,
  });
  const burst = simulator.appendBurst('identity_provider', null, burstSize, {
    from: clock.now() - 3_600_000,
    to: clock.now() - 60_000,
  });
  const stateDir = makeTempDir();
  const config: AppConfig = simulatorConfig({
    simulator,
    stateDir,
    startFrom: new Date(clock.now() - 24 * 3_600_000).toISOString(),
    overrides: {
      watch: { careers: { discover: false }, skills: { discover: false }, ...watch },
      ...(readsPerSecond ? { budget: { readsPerHour: readsPerSecond * 3_600, reserve: 0 } } : {}),
    },
  });
  const { logger, lines } = capturingLogger();
  const report = await runOnce(config, { clock, logger });
  expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);
  return { stateDir, lines, burst };
}

// One spelling of each log wherever it is written (issue 26): the store, log lines, ordering keys.
describe('the identity-provider log', () => {
  it('is written identity_provider in every log column of the store and in log lines', async () => {
    const { stateDir, lines, burst } = await backfillIdentityProviderLog({}, 3_000, 1);

    const stored = storedLogNames(stateDir);
    expect(Object.values(stored).flat().sort()).not.toContain('identityProvider');
    for (const table of ['watched_logs', 'seen_entries', 'events'])
      expect(stored[table], table).toEqual(['identity_provider']);

    const withLog = lines.map((l) => JSON.parse(l) as { log?: string; msg: string }).filter((l) => l.log);
    expect(withLog.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['backfill in progress', 'backfill caught up: the log is read to the present']),
    );
    expect(new Set(withLog.map((l) => l.log))).toEqual(new Set(['identity_provider']));
    expect(lines.join('\n')).not.toContain('identityProvider');

    // The ids are the ones consumers already hold: the rename reaches no event id.
    const delivered = readFileSync(join(stateDir, 'events.jsonl'), 'utf8');
    for (const entry of burst) expect(delivered).toContain(eventIdFor('identity_provider', '', entry.id));
  }, 60_000);

  it('takes its sort order from watch.sortOrder.identity_provider', async () => {
    const { stateDir, lines } = await backfillIdentityProviderLog({ sortOrder: { identity_provider: 'oldest-first' } });
    expect(sortOrderOf(stateDir)).toBe('oldest-first');
    expect(lines.join('\n')).not.toContain('deprecated');
  }, 60_000);

  it('takes the deprecated watch.sortOrder.identityProvider, with one warning', async () => {
    const { stateDir, lines } = await backfillIdentityProviderLog({ sortOrder: { identityProvider: 'oldest-first' } });
    expect(sortOrderOf(stateDir)).toBe('oldest-first');
    const warnings = lines
      .map((l) => JSON.parse(l) as { level: number; msg: string; tenant?: string })
      .filter((l) => l.msg.includes('deprecated'));
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 40,
        tenant: 'default',
        msg: 'watch.sortOrder: the log name "identityProvider" is deprecated; write "identity_provider"',
      }),
    ]);
  }, 60_000);
});

/** The sort order the store keeps for the identity-provider log. */
function sortOrderOf(stateDir: string): unknown {
  const db = new Database(storePath(stateDir), { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT sort_order FROM watched_logs WHERE log = 'identity_provider'").pluck().get();
  } finally {
    db.close();
  }
}
