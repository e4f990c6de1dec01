import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.js';
import { startTestSimulator } from '../support/testSimulator.js';
import { deliveredEvents, expectedEventIds } from '../support/daemonHarness.js';
import { CLI, until } from '../support/daemonProcess.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { makeTempDir } from '../support/tempDir.js';

const ROOT = join(import.meta.dirname, '..', '..');
// Thirteen lives: the fixed random sequence below kills two of them in discovery and the first
// reads, and the other eleven mid-backlog, each at a different share of it.
const KILLS = 13;

function writeConfig(dir: string, sim: Simulator): string {
  return writeCliConfig(dir, sim.url, {
    extra: [
      'watch: { careers: { discover: true }, skills: { discover: true }, startFrom: "2000-01-01T00:00:00Z", pollIntervalSeconds: 0, schedule: { firstPollWithinSeconds: 0 } }',
      'log: { level: info }',
    ],
    sinks: [`  - { name: file, type: file, path: ${join(dir, 'events.jsonl')}, delivery: { batchSize: 50 } }`],
  });
}

/** Daemons still running: killed after the test, so one that failed or timed out leaves none behind. */
const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

function startDaemon(config: string, apiKey: string, logFile: string, once = false): ChildProcess {
  const log = openSync(logFile, 'a');
  // node itself, not a wrapper: SIGKILL must hit the daemon, not a parent that leaves it running.
  const child = spawn(process.execPath, [CLI, 'run', '--config', config, ...(once ? ['--once'] : [])], {
    cwd: ROOT,
    env: { ...process.env, CHANGEFEED_API_KEY: apiKey, CHANGEFEED_CONFIG: '' },
    stdio: ['ignore', log, log],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

const exited = (child: ChildProcess): Promise<number | null> =>
  new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null
      ? resolve(child.exitCode)
      : child.once('exit', (code) => resolve(code)),
  );

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Counts the lines of a file that grows by appends, reading only what was added since the last
 * call: cheap enough to poll while the daemon writes megabytes. A file that shrank (the file sink
 * cuts a torn last line on start-up) is counted again from the start.
 */
function lineCounter(path: string): () => number {
  let offset = 0;
  let lines = 0;
  return () => {
    if (!existsSync(path)) return 0;
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size < offset) [offset, lines] = [0, 0];
      const chunk = Buffer.alloc(size - offset);
      readSync(fd, chunk, 0, chunk.length, offset);
      offset = size;
      for (const byte of chunk) if (byte === 0x0a) lines++;
      return lines;
    } finally {
      closeSync(fd);
    }
  };
}

/** Waits until the log shows the `n`th start-up: a life's progress is counted from there, not from spawn. */
async function waitForStart(logFile: string, n: number): Promise<void> {
  await until(
    () => (readFileSync(logFile, 'utf8').match(/"msg":"changefeed running"/g) ?? []).length >= n,
    60_000,
    `start-up ${n} in ${logFile}`,
  );
}

describe('crash safety', () => {
  it(`loses no entry when the daemon is killed with SIGKILL ${KILLS} times while it polls and delivers`, async () => {
    const simulator = await startTestSimulator({
      seed: 23,
      careers: 6,
      skills: 4,
      eventsPerHour: 10_000,
      historyHours: 2,
      readsPerHour: 10_000_000,
    });
    const dir = makeTempDir();
    const config = writeConfig(dir, simulator);
    const logFile = join(dir, 'daemon.log');
    let random = 42;
    const nextRandom = (): number => {
      random = (random * 1_103_515_245 + 12_345) % 2 ** 31;
      return random / 2 ** 31;
    };
    const deliveredLines = lineCounter(join(dir, 'events.jsonl'));
    // Each life is killed after delivering a random share of the history, at most 1/30 of it, so
    // that the backlog outlasts all the lives however fast or slow the machine is; a fifth of the
    // lives are killed as soon as they run, in discovery and the first reads.
    const backlog = expectedEventIds(simulator).length;
    let deliveredBeforeLastKill = 0;
    let killsWithWorkLeft = 0;
    for (let i = 0; i < KILLS; i++) {
      const child = startDaemon(config, simulator.apiKey, logFile);
      await waitForStart(logFile, i + 1);
      const share = nextRandom() < 0.2 ? 0 : Math.ceil((nextRandom() * backlog) / 30);
      const target = deliveredLines() + share;
      await until(() => deliveredLines() >= target, 120_000, `${target} delivered events`);
      const before = deliveredLines();
      child.kill('SIGKILL');
      await exited(child);
      appendFileSync(logFile, `\n--- SIGKILL ${i + 1} ---\n`);
      deliveredBeforeLastKill = deliveredLines();
      // The backlog takes several lives to deliver: those kills land mid-poll or mid-batch.
      if (before < expectedEventIds(simulator).length) killsWithWorkLeft++;
    }
    expect(killsWithWorkLeft).toBeGreaterThanOrEqual(5);
    expect(deliveredBeforeLastKill).toBeGreaterThan(0);
    // One more life, stopped with SIGTERM once it has caught up: it delivers what the others left (a
    // third of the history or more), so the final sweep below stays well within run --once's
    // delivery deadline however slow the machine is.
    const catchUp = startDaemon(config, simulator.apiKey, logFile);
    await waitForStart(logFile, KILLS + 1);
    const visible = expectedEventIds(simulator).length;
    await until(() => deliveredLines() >= visible, 600_000, `${visible} delivered events`);
    catchUp.kill('SIGTERM');
    await exited(catchUp);
    // Windows end on the service's clock, to the second: compare with what existed a second before the final sweep.
    const expected = expectedEventIds(simulator);
    await sleep(1_100);
    const final = startDaemon(config, simulator.apiKey, logFile, true);
    expect(await exited(final)).toBe(0);
    const delivered = new Set(deliveredEvents(dir).map((e) => e.id));
    const missing = expected.filter((id) => !delivered.has(id));
    expect(missing).toEqual([]);
    expect(expected.length).toBeGreaterThan(5_000);
    // No assertion depends on speed; this limit only ends a hang (each stage has its own). It
    // takes about 42 s of CPU: 75 s on two cores shared at a load average of 6.
  }, 1_200_000);
});
