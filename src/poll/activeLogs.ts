import type { LogKind } from '../logs.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { WatchedLog } from '../store/storeRecords.js';
import { STORE_RETRY_MS } from '../store/storeHealth.js';

/** How long the list of active logs is trusted before it is read again. */
const ACTIVE_REFRESH_MS = 300_000;

/**
 * The active watched logs as the poll loop plans with them, read again when marked stale (by
 * discovery and failures) or five minutes old; each successful poll hands the scheduler its log as
 * its commits left it (PollResult.watched). The timed read, rare because it costs the store across
 * tenants, is for what another process writes (`watch retry`). A store that cannot be read leaves
 * the last list in place. The scheduler keeps the list; only its counts by kind stay here.
 */
export class ActiveLogs {
  /** Logs of each kind in the last list, counted as it is read: every decision of the loop asks. */
  private kinds: ReadonlyMap<LogKind, number> = new Map();
  private readAt = Number.NEGATIVE_INFINITY;
  private stale = true;

  constructor(private readonly store: ChangefeedStore) {}

  /** How many logs of `kind` the last list read held. */
  count(kind: LogKind): number {
    return this.kinds.get(kind) ?? 0;
  }

  markStale(): void {
    this.stale = true;
  }

  /** The list read afresh if due; undefined when the last one still holds. */
  async refresh(now: number): Promise<readonly WatchedLog[] | undefined> {
    if (!this.stale && now - this.readAt < ACTIVE_REFRESH_MS) return undefined;
    try {
      const list = await readActiveLogs(this.store);
      const kinds = new Map<LogKind, number>();
      for (const w of list) kinds.set(w.log, (kinds.get(w.log) ?? 0) + 1);
      this.kinds = kinds;
      this.readAt = now;
      this.stale = false;
      return list;
    } catch (error) {
      if (!this.store.health.record(error, this.store.location)) throw error;
      this.stale = false;
      // The list could not be read: ask again after STORE_RETRY_MS, polling the last list meanwhile.
      this.readAt = now - ACTIVE_REFRESH_MS + STORE_RETRY_MS;
      return undefined;
    }
  }
}

/** The active logs, the identity-provider log first. */
export async function readActiveLogs(store: ChangefeedStore): Promise<WatchedLog[]> {
  return (await store.watchedLogs.list())
    .filter((w) => w.status === 'active')
    .sort((a, b) => Number(b.log === 'identity_provider') - Number(a.log === 'identity_provider'));
}
