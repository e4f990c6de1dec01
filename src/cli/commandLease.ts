import { hostname } from 'node:os';
import { LeaseTable } from '../cluster/leaseTable.js';
import { databaseFence, type WriteFence } from '../cluster/writeFence.js';
import { ChangefeedError } from '../errors.js';
import type { SharedByReplicas } from '../store/storeBackend.js';

/** A tenant's lease taken by a command for as long as it runs. */
export interface CommandLease {
  /** Fences every write of the command's store of the tenant, as a replica's are. */
  readonly fence: WriteFence;
  /** Settles with the reason when the lease could not be renewed: the command must stop writing. */
  readonly lost: Promise<string>;
  /** Stops renewing and gives the lease up at once, so a replica takes the tenant at its next round. */
  release(): Promise<void>;
}

/**
 * Makes a command the tenant's one writer on a shared store, as a replica is while it holds the
 * lease: a command delivering from the outbox beside the holder would send rows twice and out of
 * order, its acks unfenced. Taken only if no one holds it (else LEASE_HELD), renewed every third
 * of `leaseMs`, released when the command ends; replicas leave a held lease alone, so the tenant
 * is not polled meanwhile, and if the command dies the lease expires like a crashed replica's.
 */
export async function takeCommandLease(
  store: SharedByReplicas,
  tenant: string,
  options: { leaseMs: number; command: string },
): Promise<CommandLease> {
  const table = new LeaseTable(store.leasePool, { leaseMs: options.leaseMs });
  const holder = `${options.command}@${hostname()}-${process.pid}`;
  const answer = await table.acquireMany(holder, [{ tenant }]);
  const [granted] = answer.granted;
  // Free but passed over: its last holder's lease ran out with a write of it still open, or a
  // session holds the row. That holder delivers nothing any more, so naming it would mislead.
  if (!granted && answer.passedOver.length > 0)
    throw new ChangefeedError(
      'LEASE_HELD',
      `tenant "${tenant}" is not leased, but its lease row is locked by another transaction (the last ` +
        `holder's write still open, or a session holding the row FOR UPDATE); try again in a moment, or find ` +
        'the session in pg_locks on changefeed_leases',
    );
  if (!granted) {
    const lease = (await table.list()).find((l) => l.tenant === tenant);
    const at = lease?.holderUrl === undefined ? '' : ` (reached at ${lease.holderUrl})`;
    throw new ChangefeedError(
      'LEASE_HELD',
      `tenant "${tenant}" is leased by ${lease?.holder ?? 'another replica'}${at}, which delivers its outbox; ` +
        `queue for it with --queue-only instead, or stop the replicas first`,
    );
  }
  const claim = { tenant, holder, epoch: granted.epoch };
  let reportLost: (reason: string) => void = () => undefined;
  const lost = new Promise<string>((resolve) => (reportLost = resolve));
  // A failed renewal is tried again at the next tick (the database fence refuses writes if the
  // lease runs out meanwhile). Renewals may overlap: one stuck up to its timeout (a third of the
  // lease) must not hold the next tick back past the lease. The release waits for them.
  const renewals = new Set<Promise<void>>();
  const timer = setInterval(
    () => {
      const renewal: Promise<void> = table
        .renew(holder, [claim])
        .then(
          ({ renewed, locked }) => {
            if (renewed.length === 0 && locked.length === 0)
              reportLost(`the lease of tenant "${tenant}" expired before it was renewed`);
          },
          () => undefined,
        )
        .then(() => {
          renewals.delete(renewal);
        });
      renewals.add(renewal);
    },
    Math.max(1, Math.floor(options.leaseMs / 3)),
  );
  return {
    fence: databaseFence(claim, options.leaseMs),
    lost,
    release: async () => {
      clearInterval(timer);
      const release = (): Promise<boolean> => table.release(tenant, holder, claim.epoch).catch(() => false);
      // The release passes over a row another transaction holds (SKIP LOCKED), this command's own
      // renewal under way too; nothing else gives a command's lease up (a replica's next round
      // does for its own), so it is asked once more after the renewals under way end.
      if (!(await release())) {
        await Promise.all(renewals);
        await release();
      }
    },
  };
}
