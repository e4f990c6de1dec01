import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { formatCursor } from '../../src/feed/feedCursor.js';
import { openEventSource, TOKEN } from '../feed/feedHarness.js';
import { CLI, freePort, until } from '../support/daemonProcess.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

const ROOT = join(import.meta.dirname, '..', '..');

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function startDaemon(config: string, apiKey: string, logFile: string): ChildProcess {
  const log = openSync(logFile, 'a');
  // node itself, not a wrapper: SIGKILL must hit the daemon.
  const child = spawn(process.execPath, [CLI, 'run', '--config', config], {
    cwd: ROOT,
    env: { ...process.env, CHANGEFEED_API_KEY: apiKey, CHANGEFEED_CONFIG: '', FEED_TOKEN: TOKEN },
    stdio: ['ignore', log, log],
  });
  children.push(child);
  return child;
}

const exited = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
  );

describe('the live stream across a daemon crash', () => {
  it('delivers every event exactly once and in order when the daemon is killed mid-stream and restarted', async () => {
    const simulator = await startTestSimulator({
      seed: 31,
      careers: 6,
      skills: 4,
      eventsPerHour: 20_000,
      historyHours: 2,
      readsPerHour: 10_000_000,
    });
    const dir = makeTempDir();
    const port = await freePort();
    const config = writeCliConfig(dir, simulator.url, {
      extra: [
        'watch: { careers: { discover: true }, skills: { discover: true }, startFrom: "2000-01-01T00:00:00Z", pollIntervalSeconds: 0, schedule: { firstPollWithinSeconds: 0 } }',
        `feed: { enabled: true, port: ${port}, tokens: ["\${FEED_TOKEN}"] }`,
        'log: { level: info }',
      ],
      sinks: [`  - { name: file, type: file, path: ${join(dir, 'events.jsonl')} }`],
    });
    const logFile = join(dir, 'daemon.log');
    const first = startDaemon(config, simulator.apiKey, logFile);

    const received: { id: string; eventId: string }[] = [];
    let opens = 0;
    const source = openEventSource(`http://127.0.0.1:${port}/v1/events/stream`);
    source.addEventListener('open', () => opens++);
    source.addEventListener('message', (event) => {
      received.push({ id: event.lastEventId, eventId: (JSON.parse(event.data as string) as { id: string }).id });
    });
    try {
      await until(() => received.length >= 500, 60_000, '500 events on the stream');
      first.kill('SIGKILL');
      await exited(first);
      const atKill = received.length;
      startDaemon(config, simulator.apiKey, logFile);
      await until(() => received.length >= atKill + 1_000 && opens >= 2, 60_000, '1,000 more events after the restart');
    } finally {
      source.close();
    }
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map(exited));

    const db = new Database(join(dir, 'state', 'changefeed.sqlite'), { readonly: true });
    const last = Number(received.at(-1)?.id);
    const journal = db.prepare('SELECT seq, event_id FROM events WHERE seq <= ? ORDER BY seq').all(last) as {
      seq: number;
      event_id: string;
    }[];
    db.close();
    expect(received).toEqual(journal.map((e) => ({ id: formatCursor(e.seq), eventId: e.event_id })));
  }, 120_000);
});
