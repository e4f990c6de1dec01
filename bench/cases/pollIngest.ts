import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import { ManualClock } from '../../test/support/manualClock.js';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { noopLogger } from '../../test/support/noopLogger.js';
import { startSimulator } from '../../src/simulator/index.js';
import { withVirtualTime } from '../../test/support/virtualTime.js';
import { withPeakRss, type BenchRow } from '../benchTable.js';

/** A backfill of the simulator's history over loopback HTTP: polled, deduplicated, stored and written to a file. */
export async function pollIngest(eventsPerHour: number): Promise<BenchRow> {
  const clock = new ManualClock(Date.UTC(2026, 10, 22, 12, 0, 0));
  const simulator = await startSimulator({
    clock,
    seed: 1,
    careers: 50,
    skills: 20,
    eventsPerHour,
    historyHours: 4,
    readsPerHour: 100_000_000,
  });
  const dir = mkdtempSync(join(tmpdir(), 'changefeed-bench-'));
  const config = appConfigSchema.parse({
    api: { baseUrl: simulator.url, apiKey: simulator.apiKey },
    watch: {
      careers: { discover: true },
      skills: { discover: true },
      startFrom: '2000-01-01T00:00:00Z',
      concurrency: 4,
    },
    budget: { readsPerHour: 100_000_000, reserve: 0 },
    sinks: [{ name: 'file', type: 'file', path: join(dir, 'events.jsonl') }],
    stateDir: dir,
  });
  const entries = simulator.visibleEntries().length;
  const daemon = new ChangefeedDaemon(config, { logger: noopLogger, clock });
  const started = performance.now();
  const { result, peakRssMiB } = await withPeakRss(() => withVirtualTime(clock, daemon.runOnce(600_000)));
  const seconds = (performance.now() - started) / 1000;
  await daemon.stop();
  await simulator.close();
  if (!result.ok) throw new Error(`backfill failed: ${JSON.stringify(result.sweep.failures)}`);
  return {
    case: 'backfill over HTTP to file',
    events: entries,
    requests: simulator.requests.length,
    'events/s': Math.round(entries / seconds),
    'peak RSS MiB': Math.round(peakRssMiB),
  };
}
