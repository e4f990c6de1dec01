import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestSimulator } from '../support/testSimulator.js';
import { deliveredEvents, expectedEventIds, runOnce, simulatorConfig } from '../support/daemonHarness.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';

describe('the journal', () => {
  it(
    'a sink added later starts from now, replay fills it from the journal without any API ' +
      'read, startFrom: journal fills a new sink',
    async () => {
      const simulator = await startTestSimulator({
        seed: 41,
        careers: 3,
        skills: 2,
        eventsPerHour: 0,
        historyHours: 0,
        readsPerHour: 1_000_000,
      });
      simulator.appendBurst('career', simulator.careerIds[0] as string, 40, {
        from: Date.now() - 600_000,
        to: Date.now() - 5_000,
      });
      simulator.appendBurst('identity_provider', null, 10, { from: Date.now() - 600_000, to: Date.now() - 5_000 });
      const dir = makeTempDir();
      const sink = (name: string, extra: object = {}) => ({
        name,
        type: 'file',
        path: join(dir, `${name}.jsonl`),
        ...extra,
      });
      const first = simulatorConfig({
        simulator,
        stateDir: dir,
        startFrom: '2000-01-01T00:00:00Z',
        overrides: { sinks: [sink('a')] },
      });
      expect((await runOnce(first)).ok).toBe(true);
      const expected = new Set(expectedEventIds(simulator));
      expect(new Set(deliveredEvents(dir, 'a.jsonl').map((e) => e.id))).toEqual(expected);

      const withLaterSinks = {
        ...first,
        sinks: simulatorConfig({
          simulator,
          stateDir: dir,
          overrides: { sinks: [sink('a'), sink('b'), sink('c', { startFrom: 'journal' })] },
        }).sinks,
      };
      expect((await runOnce(withLaterSinks)).ok).toBe(true);
      expect(deliveredEvents(dir, 'b.jsonl')).toEqual([]);
      expect(new Set(deliveredEvents(dir, 'c.jsonl').map((e) => e.id))).toEqual(expected);

      const config = join(dir, 'changefeed.yaml');
      writeFileSync(
        config,
        [
          `stateDir: ${dir}`,
          'sinks:',
          ...['a', 'b', 'c'].map((n) => `  - { name: ${n}, type: file, path: ${join(dir, `${n}.jsonl`)} }`),
        ].join('\n'),
      );
      const requestsBefore = simulator.requests.length;
      const careersOnly = await runCli([
        'replay',
        '--config',
        config,
        '--sink',
        'b',
        '--since',
        '2000-01-01T00:00:00Z',
        '--log',
        'career',
      ]);
      expect(careersOnly.status, careersOnly.stderr).toBe(0);
      expect(careersOnly.stdout).toContain('queued 40 events');
      expect(deliveredEvents(dir, 'b.jsonl')).toHaveLength(40);
      const future = await runCli([
        'replay',
        '--config',
        config,
        '--sink',
        'b',
        '--since',
        new Date(Date.now() + 60_000).toISOString(),
      ]);
      expect(future.stdout).toContain('queued 0 events');
      const all = await runCli(['replay', '--config', config, '--sink', 'b', '--since', '2000-01-01T00:00:00Z']);
      expect(all.status).toBe(0);
      const replayed = deliveredEvents(dir, 'b.jsonl').map((e) => e.id);
      expect(new Set(replayed)).toEqual(expected);
      expect(replayed).toHaveLength(40 + 50);
      expect(simulator.requests.length).toBe(requestsBefore);
      const badSink = await runCli(['replay', '--config', config, '--sink', 'nope', '--since', '2000-01-01T00:00:00Z']);
      expect(badSink.status).toBe(2);
      expect(badSink.stderr).toContain('--sink must name a configured sink (a, b, c)');
    },
  );
});
