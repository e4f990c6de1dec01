import { existsSync, readdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { openDatabase, StoreError, STORE_FILE_NAME, type Db } from './database.js';
import { TENANT_TABLES, tenantHasRows, tenantTableColumns } from './tenantTables.js';

/** The meta key that records, in the tenant's own rows, which file its history came from. */
export const MOVED_FROM_KEY = 'store.movedFrom';

/**
 * Where builds before the shared file kept a tenant of a tenants directory: a file of its own
 * under `tenants/<name>/` beside the store file.
 */
export function legacyTenantFile(storeFile: string, tenant: string): string {
  return join(dirname(storeFile), 'tenants', tenant, STORE_FILE_NAME);
}

/** The tenants that still have a file of their own beside the store file. */
export function legacyTenantNames(storeFile: string): string[] {
  const dir = join(dirname(storeFile), 'tenants');
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(legacyTenantFile(storeFile, entry.name)))
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
  if (movedFrom === undefined) {
    // Opened once on its own: brought to this build's schema (its rows become the tenant `default`)
    // and its WAL folded in, so the attached file is complete.
    openDatabase(legacy).close();
    db.prepare('ATTACH DATABASE ? AS legacy').run(legacy);
    try {
      events = db.transaction(() => copyTenant(db, tenant, legacy, now))();
    } finally {
      db.prepare('DETACH DATABASE legacy').run();
    }
  }
  const keptAs = `${legacy}.moved-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
  for (const suffix of ['', '-wal', '-shm'])
    if (existsSync(`${legacy}${suffix}`)) renameSync(`${legacy}${suffix}`, `${keptAs}${suffix}`);
  return { tenant, from: legacy, keptAs, events };
}

function copyTenant(db: Db, tenant: string, legacy: string, now: number): number {
  let events = 0;
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
