import type { Command } from 'commander';
import type { Logger } from 'pino';
import { ChangefeedDaemon } from '../daemon/changefeedDaemon.js';
import { storePath } from '../store/sqlite/database.js';
import { StateDirLock } from '../store/stateDirLock.js';
import { setStoreAside } from '../store/sqlite/storeIdentity.js';
import { describeError } from '../errors.js';
import { createLogger } from '../observe/createLogger.js';
import { ProcessMetrics } from '../observe/processMetrics.js';
import { logDestination, type CliIo } from './cliIo.js';
import type { CommandHost } from './commandLine.js';
import { configOption } from './commandLine.js';
import { exitOnEscapedErrors } from './fatalErrors.js';
import { loadTenantedConfig } from './loadAppConfig.js';
import { secondsOrDuration } from './optionParsers.js';
import { bindPort } from './portInUse.js';
import { untilStopped } from './shutdownSignals.js';

export function defineRunCommand(program: Command, host: CommandHost): void {
  program
    .command('run')
    .summary('poll the service and deliver events until stopped')
    .description(
      `Polls the service and delivers events until stopped (SIGINT/SIGTERM drain; a second signal exits). SIGHUP reloads the configuration; an invalid one is reported and the running one kept.`,
    )
    .addOption(configOption())
    .option(
      '--once',
      'poll every watched log once, deliver everything pending, exit 0 (non-zero if a log or sink failed, or a configured career or skill id does not exist)',
      false,
    )
    .option(
      '--shutdown-timeout <time>',
      'how long a stop may drain: seconds (20) or a duration (90s, 2m), at most 1h',
      secondsOrDuration(3_600),
      20_000,
    )
    .option(
      '--reset-store',
      'move a SQLite store that is refused (empty, damaged, not ours) aside, every tenant in it, and start a new one',
      false,
    )
    .action(host.run((options: RunOptions) => runCommand(options, host.io)));
}

interface RunOptions {
  config?: string;
  once: boolean;
  /** Milliseconds. */
  shutdownTimeout: number;
  resetStore: boolean;
}

async function runCommand(values: RunOptions, io: CliIo): Promise<number> {
  const shutdownTimeoutMs = values.shutdownTimeout;
  const main = loadTenantedConfig({ configFlag: values.config, env: io.env });
  const config = main.process;
  const logger = createLogger({ level: config.log.level, pretty: config.log.pretty, destination: logDestination(io) });
  // In-process the caller owns the process and its last-resort handlers.
  if (!io.signal) exitOnEscapedErrors(logger);
  if (values.resetStore) resetStore(config.stateDir, logger);
  // One registry for the life of the process: a SIGHUP's new daemon counts on from the same values.
  const metrics = new ProcessMetrics();
  const daemonOptions = { logger, shutdownTimeoutMs, metrics, env: io.env, stdout: io.stdout };
  let daemon = new ChangefeedDaemon(main, daemonOptions);
  if (values.once) return runOnce(daemon, logger);
  let reloading: Promise<void> = Promise.resolve();
  let shuttingDown = false;
  const stopped = untilStopped(
    io.signal,
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
  // SIGHUP belongs to the process: in-process, the caller runs a new command to reload.
  if (!io.signal) {
    // The configuration the running daemon was started with: a reload that cannot start goes back to it.
    let running = main;
    // The daemon a reload is starting (the new configuration's, or the previous one's on the way
    // back), while its start is under way: a store it waits for (a PostgreSQL that does not answer, a
    // full disk) can hold that start for ever. A SIGHUP meanwhile stops it, as it stops a daemon
    // running, instead of queueing unsaid behind it: the operator's fix (a mistyped store.url
    // corrected, a stateDir moved to a disk with room) was read only once that store answered.
    let starting: ChangefeedDaemon | undefined;
    // That daemon stopping for the reload the SIGHUP queued, and the lock it keeps for it.
    let handingOver: Promise<StateDirLock | undefined> | undefined;
    /** Starts `next`; false when a SIGHUP stopped the start (handingOver) or a shutdown did; throws if it failed. */
    const startReloaded = async (
      next: ChangefeedDaemon,
      options: { waitForStore?: boolean } = {},
    ): Promise<boolean> => {
      daemon = next;
      starting = next;
      try {
        await next.start(options);
      } catch (error) {
        // Failed as a SIGHUP stopped it: the reload that SIGHUP queued takes over from here.
        if (handingOver === undefined) throw error;
      } finally {
        starting = undefined;
      }
      return !shuttingDown && handingOver === undefined;
    };
    const goBack = async (lock: StateDirLock | undefined): Promise<void> => {
      // The lock is still held when the new daemon failed on the same directory; taken again when it moved.
      // A store that refuses it (a full disk) is waited for, as it was while this configuration ran.
      if (await startReloaded(new ChangefeedDaemon(running, daemonOptions, lock), { waitForStore: true }))
        logger.info('SIGHUP: running on the previous configuration; fix the new one and send SIGHUP again');
    };
    const reload = async (): Promise<void> => {
      const handed = handingOver;
      handingOver = undefined;
      if (shuttingDown) return (await handed)?.release();
      let next;
      try {
        next = loadTenantedConfig({ configFlag: values.config, env: io.env });
      } catch (error) {
        if (handed === undefined) {
          logger.error(
            { err: describeError(error) },
            'SIGHUP: the new configuration is invalid; still running on the previous one',
          );
          return;
        }
        logger.error(
          { err: describeError(error) },
          'SIGHUP: the new configuration is invalid; going back to the previous one',
        );
        return goBack(await handed);
      }
      logger.info('SIGHUP: configuration is valid; restarting polling and delivery with it');
      // The state directory stays locked from one daemon to the next (stopForReload).
      const lock = handed ? await handed : await daemon.stopForReload();
      if (shuttingDown) return lock?.release();
      try {
        // Stopped by a later SIGHUP, it is not a configuration that ran: a failed reload still goes back to `running`.
        if (await startReloaded(new ChangefeedDaemon(next, daemonOptions, lock))) running = next;
        return;
      } catch (error) {
        // A daemon whose start failed leaves the lock of its directory held (see start): let go here.
        if (shuttingDown) return lock?.release();
        // Valid, but not startable here: its stateDir held by another daemon or not a directory,
        // its store refused, its port taken. The previous one ran a moment ago: start it again.
        logger.error(
          { err: describeError(error) },
          'SIGHUP: the new configuration could not be started; going back to the previous one',
        );
      }
      await goBack(lock);
    };
    process.on('SIGHUP', () => {
      if (starting !== undefined && !shuttingDown) {
        logger.info(
          'SIGHUP: a reload is still starting (its store may not answer); stopping that start to reload again',
        );
        handingOver = starting.stopForReload();
        // Awaited by the reload queued below; a stop that fails meanwhile is its to report.
        handingOver.catch(() => undefined);
        starting = undefined;
      }
      // Nothing of a reload may reach the process's last resort (exitOnEscapedErrors): neither
      // configuration could be started, so the process has nothing to run and says so.
      reloading = reloading.then(reload).catch((error: unknown) => {
        logger.fatal(
          { err: describeError(error) },
          'SIGHUP: neither the new configuration nor the previous one could be started; exiting',
        );
        process.exit(1);
      });
    });
  }
  const http = { port: config.http.port ?? 0, host: config.http.host, setting: 'http.port (or CHANGEFEED_HTTP_PORT)' };
  await bindPort(http, () => daemon.start());
  return stopped;
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
