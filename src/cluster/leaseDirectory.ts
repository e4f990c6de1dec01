import { systemClock, type Clock } from '../clock.js';
import type { LeaseRow, LeaseTable } from './leaseTable.js';

/** How long one read of the lease table answers the feed's routing: short, so a moved lease is seen soon. */
export const LEASE_DIRECTORY_MAX_AGE_MS = 1_000;

/**
 * Who holds which tenant, for sending feed clients to the holder. Every lease row is read in one
 * statement at most once per LEASE_DIRECTORY_MAX_AGE_MS, whatever the number of requests and whatever tenant
 * names they carry (a flood of made-up names costs the database nothing more), and concurrent
 * requests share the read under way. A failed read is kept as long as a good one, so a database
 * that went away is not asked again by every request. The expiry of a kept row is counted down
 * on the clock, so a lease that ran out while the read was kept is seen as expired.
 */
export class LeaseDirectory {
  private readonly clock: Clock;
  private read: { at: number; rows: Promise<Map<string, LeaseRow>> } | undefined;

  constructor(
    private readonly table: Pick<LeaseTable, 'list'>,
    options: { clock?: Clock } = {},
  ) {
    this.clock = options.clock ?? systemClock;
  }

  /** `tenant`'s lease row as of a read at most LEASE_DIRECTORY_MAX_AGE_MS old; undefined if it was never leased. */
  async lease(tenant: string): Promise<LeaseRow | undefined> {
    const now = this.clock.now();
    if (!this.read || now - this.read.at >= LEASE_DIRECTORY_MAX_AGE_MS) {
      const rows = this.table.list().then((list) => new Map(list.map((row) => [row.tenant, row])));
      // The rejection is handled by each caller awaiting it; this keeps an unawaited one quiet.
      rows.catch(() => undefined);
      this.read = { at: now, rows };
    }
    const { at, rows } = this.read;
    const row = (await rows).get(tenant);
    return row && { ...row, expiresInMs: row.expiresInMs - (this.clock.now() - at) };
  }
}
