import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ChangefeedDaemon } from '../changefeedDaemon.js';
import { createLogger } from '../observe/createLogger.js';
import { startSimulator } from '../simulator/index.js';
import { loadAppConfig } from './loadAppConfig.js';
import { onShutdownSignals } from './shutdownSignals.js';

export const DEMO_USAGE = `changefeed demo [--seed N] [--events-per-hour N]
  Starts the built-in simulator on loopback and runs the daemon against it: each delivered event
  is printed as one line and appended to state/events.jsonl. Ctrl-C stops both.`;

const DEMO_CONFIG = fileURLToPath(new URL('../../config/demo.yaml', import.meta.url));
const BACKFILL_MS = 5 * 60_000;

export async function demoCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { seed: { type: 'string', default: '1' }, 'events-per-hour': { type: 'string', default: '1800' } },
    strict: true,
  });
  const simulator = await startSimulator({
    seed: Number(values.seed),
    careers: 12,
    skills: 8,
    eventsPerHour: Number(values['events-per-hour']),
    historyHours: 1,
    readsPerHour: 36_000,
  });
  const { config } = loadAppConfig({
    configFlag: DEMO_CONFIG,
    overrides: {
      'api.baseUrl': simulator.url,
      'api.apiKey': simulator.apiKey,
      // Show the last few minutes straight away rather than waiting for the first new change.
      'watch.startFrom': new Date(Date.now() - BACKFILL_MS).toISOString(),
    },
  });
  // Each demo talks to a fresh simulator, so it starts from a fresh store.
  rmSync(config.stateDir, { recursive: true, force: true });
  const logger = createLogger({ level: config.log.level, pretty: true });
  process.stderr.write(`changefeed demo: simulator at ${simulator.url}; events below and in state/events.jsonl (Ctrl-C stops)\n`);
  const daemon = new ChangefeedDaemon(config, { logger });
  onShutdownSignals(
    async () => {
      await daemon.stop();
      await simulator.close();
    },
    logger,
    20_000,
  );
  await daemon.start();
  return new Promise<number>(() => undefined);
}
