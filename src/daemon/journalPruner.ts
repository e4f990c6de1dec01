import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { describeError, isAbortError } from '../errors.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';

const PRUNE_INTERVAL_MS = 3_600_000;
/** The first prune of a tenant comes at a random point this long after its start. */
export const FIRST_PRUNE_WITHIN_MS = 600_000;
/** Each later wait is the interval give or take this share of it. */
const PRUNE_INTERVAL_JITTER = 0.1;

/**
 * How long to wait before prune number `round` (0: the first after the tenant started), given a
 * draw of `random` in [0, 1). A replica starts all its tenants at once: pruning them all at once
 * would put every tenant's deletes on the store together, so the first prune of each falls at a
 * random point of FIRST_PRUNE_WITHIN_MS and every later one an hour (plus or minus 10 %) after.
 */
export function pruneDelayMs(round: number, random: number): number {
  if (round === 0) return Math.floor(random * FIRST_PRUNE_WITHIN_MS);
  return Math.floor(PRUNE_INTERVAL_MS * (1 - PRUNE_INTERVAL_JITTER + 2 * PRUNE_INTERVAL_JITTER * random));
}

/**
 * Drops delivered events older than `journal.retentionDays` from the store, about hourly (see
 * pruneDelayMs), until `signal` aborts; the store deletes in bounded batches and stops between
 * two when `signal` aborts. A failed prune (a full disk) is logged and tried again at the next.
 */
export async function pruneJournalHourly(deps: {
  store: ChangefeedStore;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
  signal: AbortSignal;
  random?: () => number;
}): Promise<void> {
  const retentionMs = deps.retentionDays * 86_400_000;
  const random = deps.random ?? Math.random;
  for (let round = 0; !deps.signal.aborted; round++) {
    try {
      await deps.clock.sleep(pruneDelayMs(round, random()), deps.signal);
    } catch (error) {
      if (isAbortError(error)) return;
      throw error;
    }
    try {
      const removed = await deps.store.outbox.prune(deps.clock.now() - retentionMs, deps.signal);
      if (removed > 0) deps.logger.info({ removed }, 'pruned delivered events past the journal retention');
    } catch (error) {
      deps.logger.error({ err: describeError(error) }, 'journal pruning failed; next attempt in an hour');
    }
  }
}
