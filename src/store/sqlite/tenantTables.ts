import type { Db } from './database.js';
import { TABLES } from './migrations.js';

/**
 * The tables that hold a tenant's rows, in TABLES's order, which respects the foreign key of
 * `deliveries` on `events`. `journal_heads` is not among them: copies set the head themselves;
 * nor is `tenant_records`, the deployment's.
 */
export const TENANT_TABLES = TABLES.filter((table) => table !== 'journal_heads' && table !== 'tenant_records');

/** A table's columns other than `tenant`, as the file's schema has them. */
export function tenantTableColumns(db: Db, table: string): string[] {
  return (db.prepare(`SELECT name FROM pragma_table_info(?, 'main')`).all(table) as { name: string }[])
    .map((c) => c.name)
    .filter((name) => name !== 'tenant');
}

/** Whether the tenant has anything in the file: sinks are registered and meta written as it starts. */
export function tenantHasRows(db: Db, tenant: string): boolean {
  return (
    db
      .prepare(
        `SELECT 1 FROM sinks WHERE tenant = @tenant UNION ALL SELECT 1 FROM meta WHERE tenant = @tenant
         UNION ALL SELECT 1 FROM watched_logs WHERE tenant = @tenant UNION ALL SELECT 1 FROM journal_heads WHERE tenant = @tenant
         LIMIT 1`,
      )
      .get({ tenant }) !== undefined
  );
}

/** The tenants that have anything in the file, by name. */
export function sqliteTenants(db: Db): string[] {
  return (
    db
      .prepare(
        `SELECT tenant FROM sinks UNION SELECT tenant FROM meta UNION SELECT tenant FROM watched_logs
         UNION SELECT tenant FROM journal_heads ORDER BY 1`,
      )
      .all() as { tenant: string }[]
  ).map((r) => r.tenant);
}
