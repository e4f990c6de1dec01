import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { ChangefeedDaemon } from '../daemon/changefeedDaemon.js';
import { createLogger } from '../observe/createLogger.js';
import { startWebhookReceiver } from '../receiver/webhookReceiver.js';
import { startSimulator } from '../simulator/index.js';
import { loadAppConfig } from './loadAppConfig.js';
import { logDestination, type CliIo } from './cliIo.js';
import type { CommandHost } from './commandLine.js';
import { numberIn, SEED } from './optionParsers.js';
import { untilStopped } from './shutdownSignals.js';
import { RATE } from './simulateCommand.js';

export function defineDemoCommand(program: Command, host: CommandHost): void {
  program
    .command('demo')
    .summary('run the daemon against the built-in simulator and a webhook receiver')
    .description(
      `Starts the built-in simulator and a webhook receiver on loopback and runs the daemon against them: each delivered event is printed as one line, appended to state/events.jsonl and posted, signed, to the receiver, which verifies every signature. Ctrl-C stops all three.`,
    )
    .option('--seed <n>', 'the seed of the simulated service', numberIn(SEED), 1)
    .option('--events-per-hour <n>', 'changes the simulated service makes per hour', numberIn(RATE), 1800)
    .action(host.run((options: DemoOptions) => demoCommand(options, host.io)));
}

interface DemoOptions {
  seed: number;
  eventsPerHour: number;
}

const DEMO_CONFIG = fileURLToPath(new URL('../../config/demo.yaml', import.meta.url));
const BACKFILL_MS = 5 * 60_000;
const DEMO_STATE_DIR = 'state/demo';
const RECEIVER_REPORT_MS = 15_000;
/** A fixed demo secret: the demo shows signing, it protects nothing. */
const DEMO_WEBHOOK_SECRET = 'whsec_ZGVtby1vbmx5LXdlYmhvb2stc2VjcmV0';

async function demoCommand(values: DemoOptions, io: CliIo): Promise<number> {
  const { seed, eventsPerHour } = values;
  const simulator = await startSimulator({
    seed,
    careers: 12,
    skills: 8,
    eventsPerHour,
    historyHours: 1,
    readsPerHour: 36_000,
  });
  let verified = 0;
  let rejected = 0;
  const receiver = await startWebhookReceiver({
    secrets: [DEMO_WEBHOOK_SECRET],
    onWebhook: (r) => (r.verified ? verified++ : rejected++),
  });
  const report = setInterval(() => {
    io.stderr.write(`webhook receiver: ${verified} signed deliveries verified, ${rejected} rejected\n`);
  }, RECEIVER_REPORT_MS);
  // A fresh operator token each run: the console is on loopback, but still signed in to.
  const consoleToken = randomBytes(18).toString('base64url');
  const { config } = loadAppConfig({
    configFlag: DEMO_CONFIG,
    env: {
      ...io.env,
      CHANGEFEED_DEMO_WEBHOOK_URL: receiver.url,
      CHANGEFEED_DEMO_WEBHOOK_SECRET: DEMO_WEBHOOK_SECRET,
      CHANGEFEED_DEMO_CONSOLE_TOKEN: consoleToken,
    },
    overrides: {
      'api.baseUrl': simulator.url,
      'api.apiKey': simulator.apiKey,
      // Show the last few minutes straight away rather than waiting for the first new change.
      'watch.startFrom': new Date(Date.now() - BACKFILL_MS).toISOString(),
      // The demo wipes its store at start: never let CHANGEFEED_STATE_DIR point that at real state.
      stateDir: DEMO_STATE_DIR,
    },
  });
  // Each demo talks to a fresh simulator, so it starts from a fresh store.
  rmSync(config.stateDir, { recursive: true, force: true });
  const logger = createLogger({ level: config.log.level, pretty: true, destination: logDestination(io) });
  io.stderr.write(
    `changefeed demo: simulator at ${simulator.url}, webhook receiver at ${receiver.url}; events below and in state/events.jsonl (Ctrl-C stops)\n`,
  );
  const daemon = new ChangefeedDaemon(config, { logger });
  await daemon.start();
  io.stderr.write(`operator console: ${daemon.healthUrl ?? '?'}/console (sign in with token ${consoleToken})\n`);
  return untilStopped(
    io.signal,
    async () => {
      clearInterval(report);
      await daemon.stop();
      await Promise.all([simulator.close(), receiver.close()]);
    },
    logger,
    20_000,
  );
}
