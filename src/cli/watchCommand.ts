import { withExistingStore } from './existingStore.js';
import { Argument, type Command } from 'commander';
import { readActivityPage } from '../api/activityReader.js';
import { describeError, errorCodeOf } from '../errors.js';
import { loadTenantConfig } from './loadAppConfig.js';
import { openServiceSession } from './serviceSession.js';
import { writeLine, type CliIo } from './cliIo.js';
import { configOption, tenantOption, type CommandHost, type TenantFlags } from './commandLine.js';

export function defineWatchCommand(program: Command, host: CommandHost): void {
  program
    .command('watch')
    .summary('re-check a career or skill marked gone')
    .description('Watched logs of the store.')
    .command('retry')
    .description(
      `Re-checks a career or skill marked gone (the service answered 404) with one read of its log. If the service answers now, the log is watched again from where its cursor stopped (a running daemon picks it up within 5 minutes); if it still answers 404, nothing changes and the exit code is 1. With tenants.dir, --tenant names the tenant: its store, and its key for the read.`,
    )
    .addArgument(new Argument('<log>', 'the kind of log').choices(['career', 'skill']))
    .argument('<id>', 'the id of the career or skill')
    .addOption(configOption())
    .addOption(tenantOption())
    .action(
      host.run((log: 'career' | 'skill', objectId: string, options: TenantFlags) =>
        watchCommand(log, objectId, options, host.io),
      ),
    );
}

/** `watch retry`: the way back for a log marked gone, which is otherwise never polled again. */
async function watchCommand(
  log: 'career' | 'skill',
  objectId: string,
  values: TenantFlags,
  io: CliIo,
): Promise<number> {
  const { config, tenant } = loadTenantConfig(values, io.env, 'service');
  // The status flip is one statement a lease holder picks up like a running daemon (docs/operations.md).
  return withExistingStore(config, { tenant }, async (store) => {
    const session = openServiceSession(config, io.env);
    const out = (line: string): void => writeLine(io.stdout, line);
    try {
      const watched = await store.watchedLogs.get(log, objectId);
      if (!watched) {
        out(
          `${log} ${objectId} is not watched by this store; list it in watch.${log}s.ids (or turn discovery on) and run the daemon`,
        );
        return 1;
      }
      if (watched.status !== 'gone') {
        const disabledHint = watched.status === 'disabled' ? ' (disabled logs get another chance at every start)' : '';
        out(`${log} ${objectId} is ${watched.status}, not gone: nothing to retry${disabledHint}`);
        return watched.status === 'active' ? 0 : 1;
      }
      try {
        await readActivityPage(session.client, { log, objectId, offset: 0, limit: 1 });
      } catch (error) {
        const stillGone = errorCodeOf(error) === 'API_NOT_FOUND';
        out(
          `${log} ${objectId} ${stillGone ? 'still answers 404: it stays gone' : `could not be read: ${describeError(error)}`} (${session.describeSpend()})`,
        );
        return 1;
      }
      await store.watchedLogs.setStatus(log, objectId, 'active', null);
      out(
        `${log} ${objectId} answers again: watched again from ${watched.windowEnd === null ? 'its start' : new Date(watched.windowEnd).toISOString()} ` +
          `(${session.describeSpend()})`,
      );
      return 0;
    } finally {
      await session.close();
    }
  });
}
