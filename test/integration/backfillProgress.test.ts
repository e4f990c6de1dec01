import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { runOnce, simulatorConfig, testClock } from '../support/daemonHarness.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

interface LogLine {
  level: number;
  time: number;
  msg: string;
  [field: string]: unknown;
}

/** A pino logger at info whose lines are kept, parsed. */
function capturingLogger() {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n')) if (text) lines.push(JSON.parse(text) as LogLine);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

// A 2-hour backfill of 120k events logged only "dense window narrowed" lines at info.
describe('a log backfilling a day of history', () => {
  it('reports its progress every 10 s of its clock while behind, and once when it has caught up', async () => {
    const clock = testClock();
    const simulator = await startTestSimulator({
      clock,
      seed: 71,
      careers: 1,
      skills: 0,
      identityProviderShare: 0,
      eventsPerHour: 0,
      historyHours: 0,
      readsPerHour: 1_000_000,
    });
    const careerId = simulator.careerIds[0] as string;
    simulator.appendBurst('career', careerId, 4_000, { from: clock.now() - 23 * 3_600_000, to: clock.now() - 60_000 });
    const stateDir = makeTempDir();
    const config = simulatorConfig({
      simulator,
      stateDir,
      startFrom: new Date(clock.now() - 24 * 3_600_000).toISOString(),
      overrides: {
        watch: { identityProviderEvents: false, careers: { ids: [careerId] }, skills: { discover: false } },
        // One read a second on the injected clock: the 20 pages take 20 s of it.
        budget: { readsPerHour: 3_600, reserve: 0 },
      },
    });
    const { logger, lines } = capturingLogger();
    const report = await runOnce(config, { clock, logger });
    expect(report.ok, JSON.stringify(report.sweep.failures)).toBe(true);

    const progress = lines.filter((l) => l.msg === 'backfill in progress');
    // 21 pages at one a second: a line after 10 s and one after 20 s.
    expect(progress).toHaveLength(2);
    for (const line of progress) {
      expect(line).toMatchObject({ level: 30, log: 'career', objectId: careerId });
      expect(line.pages).toBeGreaterThanOrEqual(10);
      expect(line.entries).toBeGreaterThanOrEqual(2_000);
      expect(line.behindSeconds).toBeGreaterThan(3_600);
      expect(Date.parse(line.coveredUntil as string)).toBeLessThan(clock.now() - 3_600_000);
      expect(line.entriesPerSecond).toBeGreaterThan(0);
    }
    // Nothing was committed in between (the window is read whole), so what grew is the clock.
    const gap = (progress[1]?.behindSeconds as number) - (progress[0]?.behindSeconds as number);
    expect(gap).toBeGreaterThanOrEqual(10);
    expect(gap).toBeLessThan(12);
    const caughtUp = lines.filter((l) => l.msg === 'backfill caught up: the log is read to the present');
    expect(caughtUp).toHaveLength(1);
    expect(caughtUp[0]).toMatchObject({ level: 30, log: 'career', objectId: careerId });
    expect(caughtUp[0]?.entries).toBeGreaterThanOrEqual(4_000);
    expect(lines.indexOf(caughtUp[0] as LogLine)).toBeGreaterThan(lines.indexOf(progress.at(-1) as LogLine));
  }, 120_000);
});
