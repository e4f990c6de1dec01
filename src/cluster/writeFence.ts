import pg from 'pg';
import { ChangefeedError } from '../errors.js';

/**
 * What a store shared by replicas (StoreBackend.sharedByReplicas) calls inside every write
 * transaction of a tenant, with that transaction's client, before the transaction writes: it
 * throws LeaseLostError unless this replica still holds the tenant's lease, and then the store
 * rolls back. Because the check runs in the same transaction as the write (and locks the lease
 * row, see checkLease), a replica that paused past its lease cannot write a cursor or ack a
 * delivery after another replica took the tenant over.
 */
export interface WriteFence {
  /** The tenant whose writes this fence guards. */
  readonly tenant: string;
  /** The lease epoch the writes were begun under. */
  readonly epoch: number;
  /**
   * The longest one statement of a fenced transaction may run (fencedStatementTimeoutMs of the
   * lease; PostgreSQL: `SET LOCAL statement_timeout`). A fenced transaction holds its lease row's
   * lock, which a takeover waits for.
   */
  readonly statementTimeoutMs: number;
  check(transaction: pg.ClientBase): Promise<void>;
  /**
   * `check` with `begin` (statements without parameters that open the transaction: BEGIN and its
   * bounds) sent first in the same round trip, so a fenced transaction costs no round trip more
   * than an unfenced one. A fence without it is checked after `begin`, in a round trip of its own.
   */
  beginChecked?(transaction: pg.ClientBase, begin: string): Promise<void>;
}

/**
 * The statement timeout of fenced transactions: a sixth of the lease (2.5 s with the default
 * 15 s). A takeover waits for the old holder's open fenced transaction (checkLease), and the lease
 * table gives each of its statements a third of the lease: a fenced statement must end, one way or
 * the other, well before a takeover waiting on it times out and the round is lost.
 */
export function fencedStatementTimeoutMs(leaseMs: number): number {
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

/**
 * Throws LeaseLostError unless `claim` is still the valid lease of its tenant, on the database's
 * clock. `FOR KEY SHARE` holds the lease row until the caller's transaction ends: a takeover (FOR
 * UPDATE) waits for the write to commit or roll back, a renewal does not (docs/leases.md, lock modes).
 * With `begin`, the transaction is opened by it in the same round trip (WriteFence.beginChecked):
 * a simple query takes no parameters, so the claim is written into it as quoted literals.
 */
export async function checkLease(client: pg.ClientBase, claim: LeaseClaim, begin?: string): Promise<void> {
  const found =
    begin === undefined
      ? (await client.query(leaseCheck('$1', '$2', '$3'), [claim.tenant, claim.holder, claim.epoch])).rowCount
      : lastResult(
          await client.query(
            `${begin}; ${leaseCheck(
              pg.escapeLiteral(claim.tenant),
              pg.escapeLiteral(claim.holder),
              pg.escapeLiteral(String(claim.epoch)),
            )}`,
          ),
        ).rowCount;
  if (found !== 1) {
    throw new LeaseLostError(
      claim.tenant,
      `epoch ${claim.epoch} of ${claim.holder} is no longer valid in the database`,
    );
  }
}

/** The lease check with its three values (placeholders or literals). */
function leaseCheck(tenant: string, holder: string, epoch: string): string {
  return `SELECT 1 FROM changefeed_leases
    WHERE tenant = ${tenant} AND holder = ${holder} AND epoch = ${epoch} AND expires_at > clock_timestamp()
    FOR KEY SHARE`;
}

/** The result of a simple query's last statement (node-postgres answers one of several statements with an array). */
function lastResult(result: pg.QueryResult | pg.QueryResult[]): pg.QueryResult {
  return Array.isArray(result) ? (result[result.length - 1] as pg.QueryResult) : result;
}

/**
 * A fence that asks the database in the caller's transaction; with `locallyValid` (LeaseKeeper.fence:
 * the holder's own deadline, no round trip) it first asks that, and refuses at once when it says no.
 */
export function databaseFence(claim: LeaseClaim, leaseMs: number, locallyValid?: () => boolean): WriteFence {
  return {
    tenant: claim.tenant,
    epoch: claim.epoch,
    statementTimeoutMs: fencedStatementTimeoutMs(leaseMs),
    check: (client) => checkClaim(client),
    beginChecked: (client, begin) => checkClaim(client, begin),
  };
  async function checkClaim(client: pg.ClientBase, begin?: string): Promise<void> {
    if (locallyValid?.() === false)
      throw new LeaseLostError(claim.tenant, `epoch ${claim.epoch} is past its local deadline or was given up`);
    await checkLease(client, claim, begin);
  }
}
