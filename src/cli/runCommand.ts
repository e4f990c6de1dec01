import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { ChangefeedDaemon } from '../daemon/changefeedDaemon.js';
import { storePath } from '../store/sqlite/database.js';
import { StateDirLock } from '../store/stateDirLock.js';
import { setStoreAside } from '../store/sqlite/storeIdentity.js';
import type { ProcessConfig } from '../config/mainConfig.js';
import { describeError } from '../errors.js';
import { createLogger } from '../observe/createLogger.js';
import { ProcessMetrics } from '../observe/processMetrics.js';
import { exitOnEscapedErrors } from './fatalErrors.js';
import { loadTenantedConfig } from './loadAppConfig.js';
import { requiredNumericFlag } from './numericFlag.js';
import { bindPort, type PortBinding } from './portInUse.js';
import { onShutdownSignals } from './shutdownSignals.js';

export const RUN_USAGE = `changefeed run [--config FILE] [--once] [--shutdown-timeout SECONDS] [--reset-store]
  Polls the service and delivers events until stopped (SIGINT/SIGTERM drain; a second signal exits).
  SIGHUP reloads the configuration; an invalid one is reported and the running one kept.
  --once   poll every watched log once, deliver everything pending, exit 0 (non-zero if a log or sink
           failed, or a configured career or skill id does not exist)
  --reset-store   move a SQLite store that is refused (empty, damaged, not ours) aside, every
                  tenant in it, and start a new one`;

export async function runCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      once: { type: 'boolean', default: false },
      'shutdown-timeout': { type: 'string', default: '20' },
      'reset-store': { type: 'boolean', default: false },
    },
    strict: true,
  });
  // Checked before anything starts: a bad value must not surface only at the first SIGTERM.
  const shutdownTimeoutMs =
    requiredNumericFlag('shutdown-timeout', values['shutdown-timeout'], { min: 0, max: 3_600 }) * 1000;
  const { main } = loadTenantedConfig({ configFlag: values.config });
  const config = main.process;
  const logger = createLogger({ level: config.log.level, pretty: config.log.pretty });
  exitOnEscapedErrors(logger);
  if (values['reset-store']) resetStore(config.stateDir, logger);
  // One registry for the life of the process: a SIGHUP's new daemon counts on from the same values.
  const metrics = new ProcessMetrics();
  let daemon = new ChangefeedDaemon(main, { logger, shutdownTimeoutMs, metrics });
  if (values.once) return runOnce(daemon, logger);
  let reloading: Promise<void> = Promise.resolve();
  let shuttingDown = false;
  onShutdownSignals(
    async () => {
      shuttingDown = true;
      // First the daemon running now: a reload's start that waits for the store ends at once.
      await daemon.stop();
      await reloading;
      await daemon.stop();
    },
    logger,
    shutdownTimeoutMs,
  );
  process.on('SIGHUP', () => {
    reloading = reloading.then(async () => {
      let next;
      try {
        next = loadTenantedConfig({ configFlag: values.config }).main;
      } catch (error) {
        logger.error(
          { err: describeError(error) },
          'SIGHUP: the new configuration is invalid; still running on the previous one',
        );
        return;
      }
      logger.info('SIGHUP: configuration is valid; restarting polling and delivery with it');
      await daemon.stop();
      if (shuttingDown) return;
      daemon = new ChangefeedDaemon(next, { logger, shutdownTimeoutMs, metrics });
      await daemon.start();
    });
  });
  await bindPort(httpBinding(config), () => daemon.start());
  return new Promise<number>(() => undefined);
}

/** Moves the store aside (kept, not deleted), under the lock so a running daemon is not pulled from under. */
function resetStore(stateDir: string, logger: Logger): void {
  const lock = StateDirLock.acquire(stateDir);
  try {
    const aside = setStoreAside(storePath(stateDir), Date.now());
    logger.warn(
      { stateDir, keptAs: aside ?? null },
      aside
        ? 'store reset: the old one is kept aside; starting from watch.startFrom with every sink from now'
        : 'store reset: there was no store',
    );
  } finally {
    lock.release();
  }
}

function httpBinding(config: ProcessConfig): PortBinding {
  return { port: config.http.port ?? 0, host: config.http.host, setting: 'http.port (or CHANGEFEED_HTTP_PORT)' };
}

async function runOnce(daemon: ChangefeedDaemon, logger: Logger): Promise<number> {
  try {
    const report = await daemon.runOnce();
    for (const g of report.gone) {
      logger.error(
        { tenant: g.tenant, log: g.log, objectId: g.objectId, reason: g.reason },
        `configured ${g.log} ${g.objectId} does not exist or is not visible to the key; remove ` +
          `it from watch.${g.log}s.ids, or \`changefeed watch retry ${g.log} ${g.objectId}\` ` +
          `once it is back`,
      );
    }
    logger.info(
      {
        polled: report.sweep.polled,
        emitted: report.sweep.emitted,
        failures: report.sweep.failures,
        sinks: report.sinks,
      },
      report.ok ? 'sweep complete' : 'sweep finished with failures',
    );
    return report.ok ? 0 : 1;
  } finally {
    await daemon.stop();
  }
}
