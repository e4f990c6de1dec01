import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildStatusReport } from '../../src/cli/statusReport.js';
import type { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import type { ManualClock } from '../support/manualClock.js';
import type { Simulator } from '../../src/simulator/index.js';
import { storePath } from '../../src/store/sqlite/database.js';
import { createDaemon, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { readJsonLines } from '../support/jsonLines.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { withVirtualTime } from '../support/virtualTime.js';

let daemon: ChangefeedDaemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  daemon = undefined;
});

const MINUTE = 60_000;
const WEEK_MS = 168 * 60 * MINUTE;

/**
 * A daemon started cold against a service whose logs hold a week of zipf-skewed activity, run for
 * `minutes`; `during` runs alongside on the same clock.
 */
async function firstPolls(
  schedule: Record<string, unknown>,
  minutes = 10,
  during?: (simulator: Simulator, clock: ManualClock) => Promise<void>,
): Promise<{ simulator: Simulator; clock: ManualClock; started: number; stateDir: string }> {
  const clock: ManualClock = testClock();
  const simulator = await startTestSimulator({
    clock,
    seed: 41,
    careers: 20,
    skills: 5,
    workload: { kind: 'zipf', s: 1.5 },
    eventsPerHour: 60,
    historyHours: 168,
    readsPerHour: 1_000,
  });
  const stateDir = makeTempDir();
  daemon = createDaemon(simulatorConfig({ simulator, stateDir, overrides: { watch: { schedule } } }), { clock });
  const started = clock.now();
  const d = daemon;
  await withVirtualTime(
    clock,
    (async () => {
      await d.start();
      await Promise.all([clock.sleep(minutes * MINUTE), during?.(simulator, clock)]);
    })(),
  );
  return { simulator, clock, started, stateDir };
}

/**
 * The rate each log is planned at, as `changefeed status` shows it: the daemon is stopped first so
 * that the learned state it defers is in the store.
 */
async function plannedRates(stateDir: string, now: number): Promise<Map<string, number | null>> {
  await daemon!.stop();
  const store = openSqliteStoreFile(storePath(stateDir), { readonly: true });
  try {
    const { logs } = await buildStatusReport(store, now);
    return new Map(logs.map((l) => [`${l.log}:${l.objectId}`, l.estimatedRatePerHour]));
  } finally {
    await store.close();
  }
}

describe('learning from the history a log already holds', { timeout: 120_000 }, () => {
  it(
    'the first poll reads the week before coverage for the rate alone: busy and quiet careers ' +
      'told apart at once, nothing old emitted',
    async () => {
      const { simulator, clock, started, stateDir } = await firstPolls({});
      const truth = simulator.trueRates();
      const careers = [...simulator.careerIds].sort(
        (a, b) => (truth.get(`career:${b}`) ?? 0) - (truth.get(`career:${a}`) ?? 0),
      );
      const planned = await plannedRates(stateDir, clock.now());
      const busiest = careers[0]!;
      const trueBusiest = truth.get(`career:${busiest}`)!;
      // A week of a busy career's changes is hundreds of them: its rate is known within a third.
      expect(planned.get(`career:${busiest}`)! / trueBusiest).toBeGreaterThan(0.67);
      expect(planned.get(`career:${busiest}`)! / trueBusiest).toBeLessThan(1.5);
      // A skill's version log has no date filter: its first read is the whole log, history included.
      const skills = [...simulator.skillIds].sort(
        (a, b) => (truth.get(`skill:${b}`) ?? 0) - (truth.get(`skill:${a}`) ?? 0),
      );
      const busiestSkill = `skill:${skills[0]!}`;
      expect(planned.get(busiestSkill)! / truth.get(busiestSkill)!).toBeGreaterThan(0.67);
      expect(planned.get(busiestSkill)! / truth.get(busiestSkill)!).toBeLessThan(1.5);
      // The quietest five, together, are learned far below the busiest.
      const quiet = careers.slice(-5).reduce((sum, id) => sum + (planned.get(`career:${id}`) ?? 0), 0);
      expect(quiet).toBeLessThan(trueBusiest / 5);

      const reads = (id: string) => simulator.requests.filter((r) => r.path === `/api/v1/careers/${id}/activity`);
      // The first poll asks for the week before coverage up to now, in one page.
      const [probe, window] = reads(busiest);
      expect(Date.parse(probe!.query.from!)).toBeLessThanOrEqual(started - WEEK_MS + MINUTE);
      expect(probe!.query.limit).toBe('200');
      // The busiest career's week fills that page: its first window is read on its own, at once.
      expect(Date.parse(window!.query.from!)).toBeGreaterThanOrEqual(started - MINUTE);
      expect(window!.at - probe!.at).toBeLessThan(30_000);
      // A quiet career's page holds the whole week, first window included: its next read is a regular poll.
      const [quietProbe, quietNext] = reads(careers.at(-1)!);
      expect(Date.parse(quietProbe!.query.from!)).toBeLessThanOrEqual(started - WEEK_MS + MINUTE);
      expect(quietNext!.at - quietProbe!.at).toBeGreaterThanOrEqual(MINUTE);

      // The history is learned from, not delivered.
      const events = readJsonLines<{ data: { performedAt: string } }>(join(stateDir, 'events.jsonl'));
      expect(events.length).toBeGreaterThan(0);
      for (const e of events) expect(Date.parse(e.data.performedAt)).toBeGreaterThanOrEqual(started - MINUTE);
    },
  );

  it('with historyHours 0 the first poll reads only its window', async () => {
    const { simulator, started } = await firstPolls({ historyHours: 0 });
    const careerReads = simulator.requests.filter(
      (r) => r.path.startsWith('/api/v1/careers/') && r.path.endsWith('/activity'),
    );
    expect(careerReads.length).toBeGreaterThan(0);
    for (const r of careerReads) expect(Date.parse(r.query.from!)).toBeGreaterThanOrEqual(started - MINUTE);
  });

  it(
    'a career that appeared after the first discovery is read from its coverage only: it has ' + 'no history before it',
    async () => {
      let appeared = '';
      const { simulator, started } = await firstPolls({}, 25, async (sim, clock) => {
        await clock.sleep(5 * MINUTE);
        appeared = sim.addObject('career');
      });
      const reads = simulator.requests.filter((r) => r.path === `/api/v1/careers/${appeared}/activity`);
      // Found by the discovery run at 12:15, watched from the previous run's start.
      expect(reads.length).toBeGreaterThan(0);
      expect(Date.parse(reads[0]!.query.from!)).toBeGreaterThanOrEqual(started - MINUTE);
    },
  );
});
