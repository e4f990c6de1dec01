import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { describeError, isAbortError } from '../errors.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';

const PRUNE_INTERVAL_MS = 3_600_000;

/**
 * Drops delivered events older than `journal.retentionDays` from the store, hourly, until
 * `signal` aborts. A failed prune (a full disk) is logged and tried again an hour later.
 */
export async function pruneJournalHourly(deps: {
  store: ChangefeedStore;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
  signal: AbortSignal;
}): Promise<void> {
  const retentionMs = deps.retentionDays * 86_400_000;
  while (!deps.signal.aborted) {
    try {
      const removed = await deps.store.outbox.prune(deps.clock.now() - retentionMs);
      if (removed > 0) deps.logger.info({ removed }, 'pruned delivered events past the journal retention');
    } catch (error) {
      deps.logger.error({ err: describeError(error) }, 'journal pruning failed; next attempt in an hour');
    }
    try {
      await deps.clock.sleep(PRUNE_INTERVAL_MS, deps.signal);
    } catch (error) {
      if (isAbortError(error)) return;
      throw error;
    }
  }
}
