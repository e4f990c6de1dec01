import type pg from 'pg';
import { ChangefeedError } from '../errors.js';
import { simpleQueryResults } from '../simpleQueryResults.js';

/**
 * What a store shared by replicas (StoreBackend.sharedByReplicas) calls inside every write
 * transaction of a tenant, with that transaction's client, before the transaction writes: it
 * throws LeaseLostError unless this replica still holds the tenant's lease, and then the store
 * rolls back. Because the check runs in the same transaction as the write (and locks the lease
 * row, see checkLease), a replica that paused past its lease cannot write a cursor or ack a
 * delivery after another replica took the tenant over.
 */
export interface WriteFence {
  /**
   * The longest one statement of a fenced transaction may run (fencedStatementTimeoutMs of the
   * lease; PostgreSQL: `SET LOCAL statement_timeout`). A fenced transaction holds its lease row's
   * lock, which a takeover passes over until the transaction ends.
   */
  readonly statementTimeoutMs: number;
  /**
   * Opens the transaction with `begin` (statements without parameters: BEGIN and its bounds) and
   * checks the lease in the same round trip, so a fenced transaction costs no round trip more than
   * an unfenced one and the check is its first statement.
   */
  check(transaction: pg.ClientBase, begin: string): Promise<void>;
  /**
   * For a write of one statement that checks the lease in its own text (leaseHeldCte) instead of
   * in a transaction opened by `check`: one round trip, not three. `refuseLocally` throws
   * LeaseLostError when the holder knows without asking that the lease is gone, as `check` does
   * before it asks. A fence without it has every write take `check`.
   */
  readonly inline?: { readonly claim: LeaseClaim; refuseLocally(): void };
}

/**
 * The statement timeout of fenced transactions: a sixth of the lease (2.5 s with the default
 * 15 s). A takeover passes over the lease row while the old holder's fenced transaction
 * (checkLease) is open and takes it at a later round, so the bound is how long one write can
 * delay a takeover, released or expired lease alike (docs/leases.md, lock modes).
 */
function fencedStatementTimeoutMs(leaseMs: number): number {
  return Math.max(1, Math.floor(leaseMs / 6));
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

  /** `refused`: what was not done, for the message. */
  constructor(tenant: string, reason: string, refused = 'the write was not made') {
    super('LEASE_LOST', `lease of tenant "${tenant}" lost: ${reason}; ${refused} (another replica carries on)`);
    this.tenant = tenant;
  }
}

/** What a write is told when the database says `claim` is no longer the valid lease of its tenant. */
export function lostInDatabase(claim: LeaseClaim): LeaseLostError {
  return new LeaseLostError(claim.tenant, `epoch ${claim.epoch} of ${claim.holder} is no longer valid in the database`);
}

/**
 * The lease check of checkLease as a CTE named `lease` of one statement: one row while `claim`
 * (parameters `$first` to `$first + 2`, in the order of claimParams) is the valid lease of its
 * tenant, locked `FOR KEY SHARE` until the statement's implicit transaction ends. The statement
 * writes only `WHERE EXISTS (SELECT FROM lease)` and says whether it did: a CTE that reads a
 * volatile function (clock_timestamp) and is referenced more than once is evaluated once, and a
 * concurrent takeover's new epoch fails it as it fails checkLease (the locked row is checked again
 * in its latest version).
 */
export function leaseHeldCte(first: number): string {
  return `lease AS (SELECT 1 FROM changefeed_leases
      WHERE tenant = $${first} AND holder = $${first + 1} AND epoch = $${first + 2} AND expires_at > clock_timestamp()
      FOR KEY SHARE)`;
}

/**
 * What `claim`'s lease row says now, read without waiting for its lock: still the valid lease
 * and free to share (`held`), still valid but locked FOR UPDATE by another transaction
 * (`changing`: a change of holder under way), or not the valid lease any more (`lost`).
 */
export type LeaseNow = 'held' | 'changing' | 'lost';

/**
 * LeaseNow of `claim`, for a fenced write whose statement ran out its bound: the same test as
 * leaseHeldCte, once without a lock and once `FOR KEY SHARE SKIP LOCKED`, so it never waits for
 * the row, and the lock it takes ends with the statement. One simple query (the claim written in
 * as quoted literals, as checkLease) under its own `boundMs`: a database too slow for the write is
 * not waited for longer here.
 */
export async function leaseNow(client: pg.ClientBase, claim: LeaseClaim, boundMs: number): Promise<LeaseNow> {
  const test = claimValid(client, claim);
  const answer = await client.query<{ valid: boolean; free: boolean }>(
    `SET LOCAL statement_timeout = ${Math.max(1, Math.floor(boundMs))};
      WITH valid AS (SELECT 1 FROM changefeed_leases WHERE ${test}),
        free AS (SELECT 1 FROM changefeed_leases WHERE ${test} FOR KEY SHARE SKIP LOCKED)
      SELECT EXISTS (SELECT FROM valid) AS valid, EXISTS (SELECT FROM free) AS free`,
  );
  const row = simpleQueryResults(answer).at(-1)?.rows[0];
  if (!row?.valid) return 'lost';
  return row.free ? 'held' : 'changing';
}

/** leaseHeldCte's test of `claim`, the claim written in as quoted literals for a simple query. */
function claimValid(client: pg.ClientBase, claim: LeaseClaim): string {
  return `tenant = ${client.escapeLiteral(claim.tenant)} AND holder = ${client.escapeLiteral(claim.holder)}
      AND epoch = ${client.escapeLiteral(String(claim.epoch))} AND expires_at > clock_timestamp()`;
}

/** The parameters of leaseHeldCte for `claim`. */
export function claimParams(claim: LeaseClaim): [string, string, number] {
  return [claim.tenant, claim.holder, claim.epoch];
}

/**
 * Opens a transaction on `client` with `begin` and throws LeaseLostError unless `claim` is still
 * the valid lease of its tenant, on the database's clock, in one round trip (a simple query: it
 * takes no parameters, so the claim is written into it as quoted literals). `FOR KEY SHARE` holds
 * the lease row until the transaction ends, carried over to the new versions a renewal or a release
 * makes: a takeover (FOR UPDATE SKIP LOCKED) passes over the row until the write commits or rolls
 * back (docs/leases.md, lock modes).
 */
export async function checkLease(client: pg.ClientBase, claim: LeaseClaim, begin: string): Promise<void> {
  const answer = await client.query(
    `${begin}; SELECT 1 FROM changefeed_leases WHERE ${claimValid(client, claim)} FOR KEY SHARE`,
  );
  const check = simpleQueryResults(answer).at(-1);
  if (check?.rowCount !== 1) throw lostInDatabase(claim);
}

/**
 * A fence that asks the database in the caller's transaction; with `locallyValid` (LeaseKeeper.fence:
 * the holder's own deadline, no round trip) it first asks that, and refuses at once when it says no.
 */
export function databaseFence(claim: LeaseClaim, leaseMs: number, locallyValid?: () => boolean): WriteFence {
  const refuseLocally = (): void => {
    if (locallyValid?.() === false)
      throw new LeaseLostError(claim.tenant, `epoch ${claim.epoch} is past its local deadline or was given up`);
  };
  return {
    statementTimeoutMs: fencedStatementTimeoutMs(leaseMs),
    check: async (client, begin) => {
      refuseLocally();
      await checkLease(client, claim, begin);
    },
    inline: { claim, refuseLocally },
  };
}
