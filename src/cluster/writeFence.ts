import type pg from 'pg';
import { ChangefeedError } from '../errors.js';

/**
 * What a store calls inside every write transaction of a tenant, with that transaction's client,
 * before it commits: it throws LeaseLostError unless this replica still holds the tenant's lease,
 * and then the caller rolls back. Because the check runs in the same transaction as the write
 * (and locks the lease row, see checkLease), a replica that paused past its lease cannot write a
 * cursor or ack a delivery after another replica took the tenant over.
 */
export interface WriteFence {
  /** The tenant whose writes this fence guards. */
  readonly tenant: string;
  /** The lease epoch the writes were begun under. */
  readonly epoch: number;
  check(client: pg.ClientBase): Promise<void>;
}

/** One acquisition of a tenant by a replica: what a fenced write must still match. */
export interface LeaseClaim {
  readonly tenant: string;
  readonly holder: string;
  readonly epoch: number;
}

/** A write of a tenant refused because this replica no longer holds the tenant's lease. */
export class LeaseLostError extends ChangefeedError {
  readonly tenant: string;

  constructor(tenant: string, reason: string) {
    super(
      'LEASE_LOST',
      `lease of tenant "${tenant}" lost: ${reason}; the write was not made (another replica carries on)`,
    );
    this.tenant = tenant;
  }
}

/**
 * Throws LeaseLostError unless `claim` is still the valid lease of its tenant, on the database's
 * clock. `FOR SHARE` locks the lease row until the caller's transaction ends: a replica taking the
 * tenant over (an UPDATE of that row) waits for the write to commit or roll back, so no write of
 * the old holder can commit after the new holder's acquisition. Concurrent writes of the holder
 * share the lock and do not wait for each other.
 */
export async function checkLease(client: pg.ClientBase, claim: LeaseClaim): Promise<void> {
  const result = await client.query(
    `SELECT 1 FROM changefeed_leases
      WHERE tenant = $1 AND holder = $2 AND epoch = $3 AND expires_at > clock_timestamp()
      FOR SHARE`,
    [claim.tenant, claim.holder, claim.epoch],
  );
  if (result.rowCount !== 1) {
    throw new LeaseLostError(
      claim.tenant,
      `epoch ${claim.epoch} of ${claim.holder} is no longer valid in the database`,
    );
  }
}

/** A fence that asks the database only; LeaseKeeper.fence puts the local deadline in front. */
export function databaseFence(claim: LeaseClaim): WriteFence {
  return { tenant: claim.tenant, epoch: claim.epoch, check: (client) => checkLease(client, claim) };
}

/**
 * A fence that first asks `locallyValid` (no round trip: the holder's own deadline) and refuses at
 * once when it says no, then asks the database in the caller's transaction.
 */
export function localThenDatabaseFence(claim: LeaseClaim, locallyValid: () => boolean): WriteFence {
  return {
    tenant: claim.tenant,
    epoch: claim.epoch,
    check: async (client) => {
      if (!locallyValid())
        throw new LeaseLostError(claim.tenant, `epoch ${claim.epoch} is past its local deadline or was given up`);
      await checkLease(client, claim);
    },
  };
}
