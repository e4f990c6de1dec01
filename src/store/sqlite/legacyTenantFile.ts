import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ChangefeedError } from '../../errors.js';
import { TENANT_NAME } from '../../tenants/tenantDirectory.js';
import { openDatabase, StoreError, STORE_FILE_NAME, type Db } from './database.js';
import { StoreRefusedError } from './storeIdentity.js';
import { TENANT_TABLES, tenantHasRows, tenantTableColumns } from './tenantTables.js';

/** The meta key that records, in the tenant's own rows, which file its history came from. */
export const MOVED_FROM_KEY = 'store.movedFrom';

/** The meta key of the stamp a file of an earlier build is given before it is moved, and copied with it. */
const MOVE_STAMP_KEY = 'store.moveStamp';

/**
 * Where builds before the shared file kept a tenant of a tenants directory: a file of its own
 * under `tenants/<name>/` beside the store file.
 */
export function legacyTenantFile(storeFile: string, tenant: string): string {
  return join(dirname(storeFile), 'tenants', tenant, STORE_FILE_NAME);
}

/**
 * The tenants that still have a file of their own beside the store file. A directory whose name
 * is not a tenant name (`acme.bak`, `Acme`) was no tenant's: an earlier build never made one.
 */
export function legacyTenantNames(storeFile: string): string[] {
  const dir = join(dirname(storeFile), 'tenants');
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter(
      (entry) =>
        entry.isDirectory() && TENANT_NAME.test(entry.name) && existsSync(legacyTenantFile(storeFile, entry.name)),
    )
    .map((entry) => entry.name)
    .sort();
}

export interface MovedTenant {
  tenant: string;
  from: string;
  keptAs: string;
  events: number;
}

/**
 * Moves a tenant's own file of an earlier build into the shared store, in one transaction: every
 * row, with the journal's positions and head unchanged (feed cursors stay valid) and every
 * delivery's state, so nothing is delivered twice. The old file is then renamed, not deleted.
 * A crash between the commit and the rename is finished at the next start (the moved rows record
 * where they came from); a tenant that has rows of another history is refused, never merged.
 * Returns undefined when there is nothing to move.
 */
export function moveLegacyTenantFile(db: Db, storeFile: string, tenant: string, now: number): MovedTenant | undefined {
  const legacy = legacyTenantFile(storeFile, tenant);
  if (!existsSync(legacy)) return undefined;
  const movedFrom = db.prepare('SELECT value FROM meta WHERE tenant = ? AND key = ?').get(tenant, MOVED_FROM_KEY) as
    { value: string } | undefined;
  if (movedFrom === undefined && tenantHasRows(db, tenant))
    throw new StoreError(
      `tenant ${tenant} has rows in ${storeFile} and a file of its own at ${legacy} from an earlier build; ` +
        'refusing to merge two histories. Move the one you do not want aside and start again',
    );
  let events = 0;
  if (movedFrom !== undefined) checkSameFile(db, tenant, legacy, movedFrom.value);
  else events = failingWithFile(tenant, legacy, storeFile, () => copyIn(db, tenant, legacy, now));
  const keptAs = `${legacy}.moved-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
  for (const suffix of ['', '-wal', '-shm'])
    if (existsSync(`${legacy}${suffix}`)) renameSync(`${legacy}${suffix}`, `${keptAs}${suffix}`);
  return { tenant, from: legacy, keptAs, events };
}

/**
 * Opened once on its own: brought to this build's schema (its rows become the tenant `default`)
 * and its WAL folded in, so the attached file is complete. It is stamped before it is copied:
 * found again after the move, it is the same file (a crash before it was set aside) only when it
 * carries the stamp the tenant's copied rows carry.
 */
function copyIn(db: Db, tenant: string, legacy: string, now: number): number {
  const own = openDatabase(legacy);
  try {
    own
      .prepare(`INSERT OR REPLACE INTO meta (tenant, key, value) VALUES ('default', ?, ?)`)
      .run(MOVE_STAMP_KEY, randomUUID());
  } finally {
    own.close();
  }
  db.prepare('ATTACH DATABASE ? AS legacy').run(legacy);
  try {
    return db.transaction(() => copyTenant(db, tenant, legacy, now))();
  } finally {
    db.prepare('DETACH DATABASE legacy').run();
  }
}

/** An error of SQLite or the file system (a full disk) names the tenant, both files and the problem. */
function failingWithFile<T>(tenant: string, legacy: string, storeFile: string, work: () => T): T {
  try {
    return work();
  } catch (error) {
    // Its own advice (run --reset-store) would set aside the shared file, every tenant's store.
    if (error instanceof StoreRefusedError)
      throw new ChangefeedError(
        'STORE_REFUSED',
        `tenant ${tenant}'s own file ${legacy}, from an earlier build, ${error.problem}; refusing to move it into ` +
          `${storeFile}. Restore it from a backup, or move it aside to start tenant ${tenant} afresh (its events ` +
          `would be delivered again); not run --reset-store, which sets aside ${storeFile}, the store of every tenant`,
        { cause: error },
      );
    if (error instanceof ChangefeedError) throw error;
    const code = (error as { code?: string }).code;
    throw new StoreError(
      `moving tenant ${tenant}'s own file ${legacy} into ${storeFile} failed (${(error as Error).message}` +
        `${code ? `, ${code}` : ''}); nothing of it was moved and the file is where it was`,
      error,
    );
  }
}

/**
 * A file at the old place of a tenant already moved is the moved one only when it carries the
 * stamp its copied rows carry; any other (an earlier build run again since) is another history.
 */
function checkSameFile(db: Db, tenant: string, legacy: string, movedFrom: string): void {
  const stampOf = (reader: Db, sql: string, ...params: unknown[]) =>
    (reader.prepare(sql).get(...params) as { value: string } | undefined)?.value;
  const copied = stampOf(db, 'SELECT value FROM meta WHERE tenant = ? AND key = ?', tenant, MOVE_STAMP_KEY);
  let found: string | undefined;
  try {
    const reader = new Database(legacy, { readonly: true, fileMustExist: true });
    try {
      found = stampOf(reader, 'SELECT value FROM meta WHERE key = ?', MOVE_STAMP_KEY);
    } finally {
      reader.close();
    }
  } catch {
    found = undefined;
  }
  if (found === copied) return;
  const at = (JSON.parse(movedFrom) as { at?: number }).at;
  throw new StoreError(
    `tenant ${tenant} was moved into ${db.name} from its own file ${legacy}` +
      `${at === undefined ? '' : ` at ${new Date(at).toISOString()}`}, and a file with another history is there ` +
      'again (an earlier build run since?); refusing to merge two histories. Move the one you do not want aside ' +
      'and start again',
  );
}

function copyTenant(db: Db, tenant: string, legacy: string, now: number): number {
  let events = 0;
  // A file of an earlier build holds one tenant, `default`; rows of others would be left behind.
  const others = (
    db
      .prepare(
        TENANT_TABLES.map((table) => `SELECT tenant FROM legacy.${table} WHERE tenant <> 'default'`).join(' UNION ') +
          " UNION SELECT tenant FROM legacy.journal_heads WHERE tenant <> 'default' ORDER BY 1",
      )
      .all() as { tenant: string }[]
  ).map((r) => r.tenant);
  if (others.length > 0)
    throw new StoreError(
      `the file ${legacy} of tenant ${tenant} holds rows of other tenants too (${others.join(', ')}), so it is ` +
        'not a file of an earlier build; refusing to move it. Move it aside and start again',
    );
  for (const table of TENANT_TABLES) {
    const columns = tenantTableColumns(db, table).join(', ');
    const copied = db
      .prepare(
        `INSERT INTO main.${table} (tenant, ${columns}) SELECT ?, ${columns} FROM legacy.${table} WHERE tenant = 'default'`,
      )
      .run(tenant).changes;
    if (table === 'events') events = copied;
  }
  db.prepare(
    `INSERT INTO main.journal_heads (tenant, head) SELECT ?, head FROM legacy.journal_heads WHERE tenant = 'default'`,
  ).run(tenant);
  db.prepare('INSERT OR REPLACE INTO meta (tenant, key, value) VALUES (?, ?, ?)').run(
    tenant,
    MOVED_FROM_KEY,
    JSON.stringify({ file: legacy, at: now }),
  );
  return events;
}
