import { withExistingStore } from './existingStore.js';
import { parseArgs } from 'node:util';
import { readActivityPage } from '../api/activityReader.js';
import { ChangefeedError, describeError, errorCodeOf } from '../errors.js';
import { loadTenantConfig } from './loadAppConfig.js';
import { openServiceSession } from './serviceSession.js';

export const WATCH_USAGE = `changefeed watch retry [--config FILE] [--tenant NAME] <career|skill> <ID>
  Re-checks a career or skill marked gone (the service answered 404) with one read of its log. If
  the service answers now, the log is watched again from where its cursor stopped (a running daemon
  picks it up within 30 s); if it still answers 404, nothing changes and the exit code is 1.
  With tenants.dir, --tenant names the tenant: its store, and its key for the read.`;

/** `watch retry`: the way back for a log marked gone, which is otherwise never polled again. */
export async function watchCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'retry') throw new ChangefeedError('USAGE', `expected "retry"\n\n${WATCH_USAGE}`);
  const { values, positionals } = parseArgs({
    args: rest,
    options: { config: { type: 'string', short: 'c' }, tenant: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const [log, objectId, ...extra] = positionals;
  if ((log !== 'career' && log !== 'skill') || objectId === undefined || objectId === '' || extra.length > 0) {
    throw new ChangefeedError('USAGE', 'watch retry needs a log (career or skill) and one id');
  }
  const { config, tenant } = loadTenantConfig({ configFlag: values.config, tenant: values.tenant }, 'service');
  // The status flip is one statement a lease holder picks up like a running daemon (docs/operations.md).
  return withExistingStore(config, { tenant }, async (store) => {
    const session = openServiceSession(config);
    const out = (line: string): boolean => process.stdout.write(`${line}\n`);
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
