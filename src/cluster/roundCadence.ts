import type { LeaseRow } from './leaseTable.js';

/**
 * Past the moment a lease becomes free, how long a round waits before it looks: the times come
 * from two columns of one read (expiry and the holder's heartbeat), written apart by the holder.
 */
export const FREE_LEASE_MARGIN_MS = 50;

export interface RoundCadenceInput {
  /** This replica's instance id. */
  me: string;
  /** The regular next round: a renewal interval after this one started (keeper clock, ms). */
  regularAt: number;
  /** When the lease rows were read (keeper clock, ms, taken after the answer came). */
  readAt: number;
  /** The lease rows as read, their times counted from the read. */
  rows: readonly Pick<LeaseRow, 'holder' | 'expiresInMs' | 'holderLiveForMs'>[];
}

/**
 * When the keeper's next round runs: at its regular time, or sooner, at the first moment a lease
 * another replica holds becomes free to take, so that a replica that died is taken over then
 * rather than up to a renewal interval later. A lease is free to take once it has expired and its
 * holder no longer counts as live (its heartbeat a lease old): until then the deal still gives the
 * holder its share. Live holders renew every third of a lease, so their leases never come due
 * before the regular round; a lease already free now was dealt by this round, and does not bring
 * the next one forward (no round follows another without a wait).
 */
export function nextRoundAt(input: RoundCadenceInput): number {
  let at = input.regularAt;
  for (const row of input.rows) {
    if (row.holder === undefined || row.holder === input.me) continue;
    const freeInMs = Math.max(row.expiresInMs, row.holderLiveForMs);
    if (freeInMs > 0) at = Math.min(at, input.readAt + freeInMs + FREE_LEASE_MARGIN_MS);
  }
  return at;
}
