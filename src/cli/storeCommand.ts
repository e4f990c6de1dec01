import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { ChangefeedError } from '../errors.js';
import { PostgresStoreBackend } from '../store/postgres/postgresStoreBackend.js';
import { openDatabase } from '../store/sqlite/database.js';
import { StateDirLock } from '../store/stateDirLock.js';
import { storeConfigSchema } from '../store/storeConfig.js';
import { storeLocation } from '../store/storeLocation.js';
import { copySqliteToPostgres } from '../store/storeMigration.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { TENANT_NAME } from '../tenants/tenantDirectory.js';

export const STORE_USAGE = `changefeed store migrate --from sqlite:PATH --to postgres://... [--schema NAME] [--tenant NAME]
  Moves a single-instance deployment to the shared PostgreSQL store without re-delivering
  anything: cursors, seen ids, the journal with its positions (feed cursors stay valid), every
  delivery's state, dead letters, learned rates, quarantine and meta, into one tenant (default
  "default"), in one transaction. Stop the daemon first: the command takes its state directory's
  lock. Refuses a tenant that already has data in PostgreSQL.
  --schema   the PostgreSQL schema (store.schema; default changefeed)`;

export async function storeCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'migrate') throw new ChangefeedError('USAGE', `expected "migrate"\n\n${STORE_USAGE}`);
  const { values } = parseArgs({
    args: rest,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      schema: { type: 'string', default: 'changefeed' },
      tenant: { type: 'string', default: DEFAULT_TENANT },
    },
    strict: true,
  });
  if (!values.from?.startsWith('sqlite:'))
    throw new ChangefeedError('USAGE', '--from must be sqlite:<path of the store>');
  if (!values.to || !/^postgres(ql)?:\/\//i.test(values.to))
    throw new ChangefeedError('USAGE', '--to must be a postgres:// URL');
  if (!TENANT_NAME.test(values.tenant))
    throw new ChangefeedError(
      'USAGE',
      `--tenant "${values.tenant}" is not a tenant name (lowercase letters, digits, - and _)`,
    );
  const store = storeConfigSchema.parse({ url: values.from, schema: values.schema });
  const from = storeLocation({ stateDir: '.', store }, DEFAULT_TENANT);
  if (from.kind !== 'sqlite' || !existsSync(from.file))
    throw new ChangefeedError('STORE_MISSING', `no SQLite store at ${values.from.slice('sqlite:'.length)}`);
  const to = storeLocation(
    { stateDir: '.', store: storeConfigSchema.parse({ url: values.to, schema: values.schema }) },
    DEFAULT_TENANT,
  );
  if (to.kind !== 'postgres') throw new ChangefeedError('USAGE', '--to must be a postgres:// URL');
  // A daemon still writing the file would keep polling after its history was copied.
  const lock = StateDirLock.acquire(dirname(from.file));
  try {
    const source = openDatabase(from.file, { readonly: true });
    try {
      const target = await PostgresStoreBackend.open(to, { applicationName: 'changefeed store migrate' });
      try {
        const report = await copySqliteToPostgres(source, target, values.tenant);
        const copied = Object.entries(report.rows)
          .filter(([, n]) => n > 0)
          .map(([table, n]) => `${table} ${n}`)
          .join(', ');
        process.stdout.write(
          `migrated ${from.file} into tenant ${report.tenant} (${copied || 'nothing to copy'}; journal head ${report.journalHead})\n`,
        );
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
