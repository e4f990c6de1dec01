import { describe, expect, it } from 'vitest';
import type { AppConfig } from '../../src/config/appConfigSchema.js';
import { eventIdFor } from '../../src/events/eventId.js';
import { storePath } from '../../src/store/sqlite/database.js';
import {
  createDaemon,
  deliveredEvents,
  duplicatesOf,
  runOnce,
  simulatorConfig,
  testClock,
} from '../support/daemonHarness.js';
import { startRewritingProxy } from '../support/rewritingProxy.js';
import { makeTempDir } from '../support/tempDir.js';
import { withVirtualTime } from '../support/virtualTime.js';
import { newestFirstSkillLog, startTestSimulator } from '../support/testSimulator.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

const DAY_MS = 86_400_000;

// One answer whose Date header was 30 days ahead moved a career's cursor 30 days into the future:
// every entry written afterwards was never read, and status showed lag 0.
describe('a service answer with a Date header 30 days ahead', () => {
  it('is not believed: every entry written afterwards is delivered', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 41,
      careers: 1,
      skills: 0,
      identityProviderShare: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const careerId = simulator.careerIds[0] as string;
    let lied = 0;
    const baseUrl = await startRewritingProxy(simulator.url, (answer) => {
      if (answer.index > 1) return answer;
      lied++;
      return {
        ...answer,
        headers: {
          ...answer.headers,
          date: new Date(Date.parse(answer.headers.date ?? '') + 30 * DAY_MS).toUTCString(),
        },
      };
    });
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      overrides: {
        watch: { identityProviderEvents: false, careers: { ids: [careerId] }, skills: { discover: false } },
      },
    });
    const proxied = { ...config, api: { ...config.api, baseUrl } };

    expect((await runOnce(proxied, { clock })).ok).toBe(true);
    expect(lied).toBe(1);
    const store = openSqliteStoreFile(storePath(stateDir));
    const cursor = (await store.watchedLogs.get('career', careerId))?.windowEnd ?? 0;
    await store.close();
    expect(cursor).toBeLessThanOrEqual(clock.now());

    const written = [];
    for (let sweep = 0; sweep < 3; sweep++) {
      await clock.advance(60_000);
      written.push(
        ...simulator.appendBurst('career', careerId, 5, { from: clock.now() - 50_000, to: clock.now() - 1_000 }),
      );
      await clock.advance(2_000);
      expect((await runOnce(proxied, { clock })).ok).toBe(true);
    }
    const ids = deliveredEvents(stateDir).map((e) => e.id);
    expect(duplicatesOf(ids)).toEqual([]);
    expect(new Set(ids)).toEqual(new Set(written.map((e) => eventIdFor('career', careerId, e.id))));
  });

  it(
    'a cursor already in the future (left by a daemon that believed such an answer) is read ' +
      'again from the last successful poll',
    async () => {
      const clock = testClock();
      const simulator = await startTestSimulator({
        clock,
        seed: 42,
        careers: 1,
        skills: 0,
        identityProviderShare: 0,
        eventsPerHour: 0,
        historyHours: 0,
        readsPerHour: 1_000_000,
      });
      const careerId = simulator.careerIds[0] as string;
      const stateDir = makeTempDir();
      const config = simulatorConfig({
        simulator,
        stateDir,
        overrides: {
          watch: { identityProviderEvents: false, careers: { ids: [careerId] }, skills: { discover: false } },
        },
      });
      expect((await runOnce(config, { clock })).ok).toBe(true);
      const store = openSqliteStoreFile(storePath(stateDir));
      store.db
        .prepare('UPDATE watched_logs SET window_end = ?, last_success_at = ? WHERE object_id = ?')
        .run(clock.now() + 30 * DAY_MS, clock.now(), careerId);
      await store.close();
      await clock.advance(600_000);
      const written = simulator.appendBurst('career', careerId, 7, {
        from: clock.now() - 500_000,
        to: clock.now() - 1_000,
      });
      await clock.advance(2_000);
      expect((await runOnce(config, { clock })).ok).toBe(true);
      const ids = deliveredEvents(stateDir).map((e) => e.id);
      expect(new Set(ids)).toEqual(new Set(written.map((e) => eventIdFor('career', careerId, e.id))));
    },
  );

  it(
    "a skill log's window end in the future (left the same way) does not end a read before an entry " +
      'that arrived late, within the overlap, on its second page',
    async () => {
      const clock = testClock();
      const skill = await newestFirstSkillLog(clock, 43);
      const config = simulatorConfig({
        simulator: skill.simulator,
        stateDir: makeTempDir(),
        overrides: { watch: { identityProviderEvents: false, overlapSeconds: 300 } },
      });
      const { delivered, expected } = await readLateEntryOnPageTwo(
        skill,
        config,
        () => clock.now(),
        async () => {
          const store = openSqliteStoreFile(storePath(config.stateDir));
          store.db
            .prepare('UPDATE watched_logs SET window_end = ? WHERE object_id = ?')
            .run(clock.now() + 30 * DAY_MS, skill.skillId);
          await store.close();
        },
      );
      expect(delivered).toEqual(expected);
    },
  );

  it(
    "a daemon whose clock is 4 minutes fast knows the service's before its first skill read (the " +
      "start's ping): the window end it records lets an entry late by less than the overlap be read",
    async () => {
      const clock = testClock();
      const SKEW = 240_000;
      const skill = await newestFirstSkillLog(clock, 44);
      // The service's clock, as its Date header says, is SKEW behind the daemon's.
      const baseUrl = await startRewritingProxy(skill.simulator.url, (answer) => ({
        ...answer,
        headers: { ...answer.headers, date: new Date(Date.parse(answer.headers.date ?? '') - SKEW).toUTCString() },
      }));
      const config = simulatorConfig({
        simulator: skill.simulator,
        stateDir: makeTempDir(),
        overrides: {
          watch: {
            identityProviderEvents: false,
            overlapSeconds: 300,
            skills: { ids: [skill.skillId], discover: false },
            careers: { discover: false },
          },
        },
      });
      const proxied = { ...config, api: { ...config.api, baseUrl } };
      const { delivered, expected } = await readLateEntryOnPageTwo(skill, proxied, () => clock.now() - SKEW);
      expect(delivered).toEqual(expected);
    },
  );

  it('makes readiness report a clock problem while the latest Date is not believed', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 43,
      careers: 1,
      skills: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    // While lying, answers are 30 and 31 days ahead in turn: they never agree, so however many the
    // daemon's polls receive, none is believed.
    let lie = false;
    let answered = 0;
    let lies = 0;
    const baseUrl = await startRewritingProxy(simulator.url, (answer) => {
      answered++;
      if (!lie) return answer;
      const aheadMs = (lies++ % 2 === 0 ? 30 : 31) * DAY_MS;
      return {
        ...answer,
        headers: { ...answer.headers, date: new Date(Date.parse(answer.headers.date ?? '') + aheadMs).toUTCString() },
      };
    });
    const config = simulatorConfig({ simulator, stateDir: makeTempDir() });
    const daemon = createDaemon({ ...config, api: { ...config.api, baseUrl } }, { clock });
    // The daemon polls on its own: time runs until the service has answered once more, then a
    // second on, which the clock reaches only once nothing is in flight (the answer read).
    const nextAnswer = async (): Promise<void> => {
      const before = answered;
      await withVirtualTime(
        clock,
        (async () => {
          while (answered === before) await clock.sleep(1_000);
          await clock.sleep(1_000);
        })(),
        { maxVirtualMs: 3_600_000 },
      );
    };
    try {
      const clockCheck = () => daemon.readiness().find((c) => c.name === 'clock');
      // The daemon's start asks the service once (the ping) before anything else.
      await withVirtualTime(clock, daemon.start());
      expect(answered).toBeGreaterThan(0);
      expect(clockCheck()).toEqual({ name: 'clock', ok: true });
      lie = true;
      await nextAnswer();
      expect(clockCheck()?.ok).toBe(false);
      // Date counts whole seconds: the figure is within one of the lie it reports.
      const ahead = Number(/is (\d+) s ahead/.exec(clockCheck()?.detail ?? '')?.[1]);
      expect([30, 31].some((days) => Math.abs(ahead - (days * DAY_MS) / 1000) <= 1)).toBe(true);
      lie = false;
      await nextAnswer();
      expect(clockCheck()?.ok).toBe(true);
    } finally {
      await daemon.stop();
    }
  });
});

/**
 * Two runs of the daemon on the skill log (overlap 5 minutes): the first reads 450 entries
 * performed 4 to 2 minutes before it (three pages of 200), then `afterFirst` runs; a minute later
 * the second finds news on page one beside 197 entries read before, and on page two an entry
 * performed 3 minutes before the first read and written since, late by less than the overlap.
 * `serviceNow` is the service's clock. Returns the events delivered and the ones expected.
 */
async function readLateEntryOnPageTwo(
  { clock, simulator, skillId }: Awaited<ReturnType<typeof newestFirstSkillLog>>,
  config: AppConfig,
  serviceNow: () => number,
  afterFirst: () => Promise<void> = () => Promise.resolve(),
): Promise<{ delivered: Set<string>; expected: Set<string> }> {
  simulator.appendBurst('skill', skillId, 450, { from: serviceNow() - 240_000, to: serviceNow() - 120_000 });
  expect((await runOnce(config, { clock })).ok).toBe(true);
  await afterFirst();
  await clock.advance(60_000);
  const news = simulator.appendBurst('skill', skillId, 3, { from: serviceNow() - 30_000, to: serviceNow() - 1_000 });
  const late = simulator.appendBurst('skill', skillId, 1, {
    from: serviceNow() - 240_000,
    to: serviceNow() - 239_000,
  });
  await clock.advance(1_000);
  expect((await runOnce(config, { clock })).ok).toBe(true);
  return {
    delivered: new Set(deliveredEvents(config.stateDir).map((e) => e.id)),
    expected: new Set([...news, ...late].map((e) => eventIdFor('skill', skillId, e.id))),
  };
}
