import type { TenantConnection } from './tenantConnection.js';

/**
 * One kind of read asked of many tenants of one SQLite file in the same turn of the event loop,
 * answered by one statement for all of them (`sql` takes the tenants as a JSON array and returns
 * each row with its `tenant`): a /metrics scrape asks every tenant at once. Each answer comes
 * from a statement run after its question (a turn later), never from rows read before it asked.
 * Should the statement fail, every tenant of the batch gets its error.
 */
export class TurnBatchedRead<R extends { tenant: string }> {
  private open: { tenants: Set<string>; rows: Promise<Map<string, R[]>> } | undefined;

  constructor(private readonly sql: string) {}

  /** The rows of the tenant of `conn`, in the statement's order. */
  async rowsOf(conn: TenantConnection): Promise<R[]> {
    let batch = this.open;
    if (batch === undefined) {
      const tenants = new Set<string>();
      batch = { tenants, rows: this.readAfterTurn(conn, tenants) };
      this.open = batch;
    }
    batch.tenants.add(conn.tenant);
    return (await batch.rows).get(conn.tenant) ?? [];
  }

  private async readAfterTurn(conn: TenantConnection, tenants: Set<string>): Promise<Map<string, R[]>> {
    // The questions of this turn join the batch; the next turn's open another.
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.open = undefined;
    const byTenant = new Map<string, R[]>();
    for (const row of conn.statement<[string], R>(this.sql).all(JSON.stringify([...tenants]))) {
      const rows = byTenant.get(row.tenant);
      if (rows) rows.push(row);
      else byTenant.set(row.tenant, [row]);
    }
    return byTenant;
  }
}
