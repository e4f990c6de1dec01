import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { ChangefeedError } from '../errors.js';
import { openDatabase } from '../store/sqlite/database.js';
import { StateDirLock } from '../store/stateDirLock.js';
import { storeConfigSchema } from '../store/storeConfig.js';
import { loadPostgresEngine } from '../store/openStoreBackend.js';
import { storeLocation } from '../store/storeLocation.js';
import {
  copySqliteToPostgres,
  countTenantRows,
  StoreMigrationError,
  tenantsWithData,
} from '../store/storeMigration.js';
import { sqliteTenants } from '../store/sqlite/tenantTables.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { TENANT_NAME } from '../tenants/tenantDirectory.js';
import type { CliIo } from './cliIo.js';
import type { CommandHost } from './commandLine.js';
import { createProgressReporter } from './progressReporter.js';

export function defineStoreCommand(program: Command, host: CommandHost): void {
  program
    .command('store')
    .summary('move a deployment on SQLite to the shared PostgreSQL store')
    .description('Operations on the store as a whole.')
    .command('migrate')
    .description(
      `Moves a deployment on SQLite to the shared PostgreSQL store without re-delivering anything: cursors, seen ids, the journal with its positions (feed cursors stay valid), every delivery's state, dead letters, learned rates, quarantine and meta, each tenant in one transaction under its own name. Stop the daemon first: the command takes its state directory's lock. Refuses, before copying anything, when a tenant already has data in PostgreSQL. Shows its progress on stderr: a bar on a terminal, otherwise a line every 2 s (rows, rate, time left).`,
    )
    .option('--from <sqlite:path>', 'the SQLite store: sqlite:<path of the store>')
    .option('--to <postgres://...>', 'the PostgreSQL store')
    .option('--schema <name>', 'the PostgreSQL schema (store.schema)', 'changefeed')
    .option(
      '--tenant <name>',
      'only this tenant; the store of a daemon without tenants.dir (its one tenant "default") goes into this name',
    )
    .action(host.run((options: StoreMigrateOptions) => storeCommand(options, host.io)));
}

interface StoreMigrateOptions {
  from?: string;
  to?: string;
  schema: string;
  tenant?: string;
}

async function storeCommand(values: StoreMigrateOptions, io: CliIo): Promise<number> {
  if (!values.from?.startsWith('sqlite:'))
    throw new ChangefeedError('USAGE', '--from must be sqlite:<path of the store>');
  if (!values.to || !/^postgres(ql)?:\/\//i.test(values.to))
    throw new ChangefeedError('USAGE', '--to must be a postgres:// URL');
  if (values.tenant !== undefined && !TENANT_NAME.test(values.tenant))
    throw new ChangefeedError(
      'USAGE',
      `--tenant "${values.tenant}" is not a tenant name (lowercase letters, digits, - and _)`,
    );
  const store = storeConfigSchema.parse({ url: values.from, schema: values.schema });
  const from = storeLocation({ stateDir: '.', store });
  if (from.kind !== 'sqlite' || !existsSync(from.file))
    throw new ChangefeedError('STORE_MISSING', `no SQLite store at ${values.from.slice('sqlite:'.length)}`);
  const to = storeLocation({
    stateDir: '.',
    store: storeConfigSchema.parse({ url: values.to, schema: values.schema }),
  });
  if (to.kind !== 'postgres') throw new ChangefeedError('USAGE', '--to must be a postgres:// URL');
  // A daemon still writing the file would keep polling after its history was copied.
  const lock = StateDirLock.acquire(dirname(from.file));
  try {
    // Opened for writing, under the lock: brought to this build's schema before it is copied.
    const source = openDatabase(from.file);
    try {
      const target = await (await loadPostgresEngine()).open(to, { applicationName: 'changefeed store migrate' });
      try {
        const moves = chooseTenants(sqliteTenants(source), values.tenant);
        if (moves.length === 0) {
          io.stdout.write(`${from.file} holds no tenant: nothing to copy\n`);
          return 0;
        }
        const taken = await tenantsWithData(
          target.pool,
          moves.map((m) => m.to),
        );
        if (taken.length > 0) {
          const free = moves.map((m) => m.to).filter((t) => !taken.includes(t));
          throw new StoreMigrationError(
            `${taken.join(', ')} already ${taken.length === 1 ? 'has' : 'have'} data in the PostgreSQL store; nothing was ` +
              'copied (a second migration would mix two histories)' +
              (free.length > 0 ? `; to copy the others, run again with --tenant ${free.join(', then --tenant ')}` : ''),
          );
        }
        const copiedTenants: string[] = [];
        for (const move of moves) {
          const progress = createProgressReporter({
            label: `store migrate ${move.from}`,
            unit: 'rows',
            total: countTenantRows(source, move.from),
            stream: io.stderr,
            now: () => performance.now(),
          });
          const copy = () => copySqliteToPostgres(source, target, move.to, move.from, (rows) => progress.update(rows));
          const report = await copy().catch((error: unknown) => {
            progress.stop();
            // Each tenant is its own transaction: those before it stay copied, and a run without
            // --tenant would now be refused, so say which are left.
            const left = moves.slice(copiedTenants.length).map((m) => m.to);
            throw new StoreMigrationError(
              `copying tenant ${move.from} into tenant ${move.to} failed, and nothing of it was copied: ` +
                `${(error as Error).message}. ` +
                (copiedTenants.length > 0 ? `copied before it: ${copiedTenants.join(', ')}; ` : '') +
                `not copied: ${left.join(', ')}` +
                (copiedTenants.length > 0
                  ? ` (once the problem is fixed, run again with --tenant ${left.join(', then --tenant ')})`
                  : ''),
            );
          });
          progress.stop();
          copiedTenants.push(move.to);
          const copied = Object.entries(report.rows)
            .filter(([, n]) => n > 0)
            .map(([table, n]) => `${table} ${n}`)
            .join(', ');
          io.stdout.write(
            `migrated ${from.file}${move.from === DEFAULT_TENANT ? '' : ` (tenant ${move.from})`} into tenant ` +
              `${report.tenant} (${copied || 'nothing to copy'}; journal head ${report.journalHead})\n`,
          );
        }
        return 0;
      } finally {
        await target.close();
      }
    } finally {
      source.close();
    }
  } finally {
    lock.release();
  }
}

/**
 * Which tenants of the file go where: all of them under their own names, or the one named (the
 * one tenant `default` of a daemon without a tenants directory goes into that name).
 */
function chooseTenants(inFile: readonly string[], only: string | undefined): { from: string; to: string }[] {
  if (only === undefined) return inFile.map((t) => ({ from: t, to: t }));
  if (inFile.includes(only)) return [{ from: only, to: only }];
  if (inFile.length === 1 && inFile[0] === DEFAULT_TENANT) return [{ from: DEFAULT_TENANT, to: only }];
  throw new ChangefeedError(
    'USAGE',
    `--tenant ${only}: the store holds no such tenant (it holds ${inFile.length === 0 ? 'none' : inFile.join(', ')})`,
  );
}
