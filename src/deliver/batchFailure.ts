import { describeError } from '../errors.js';
import { SinkPartialFailureError, SinkRejectedError, type ItemFailure } from '../sinkContract/sinkErrors.js';
import type { OutboxStore } from '../store/changefeedStore.js';
import type { FailedDelivery, PendingDelivery } from '../store/storeRecords.js';
import type { PendingWindow } from './pendingWindow.js';
import { logKey } from '../logs.js';
import type { RetryConfig } from '../sinkContract/deliveryConfig.js';
import { isPoison } from './poisonSearch.js';
import { isExhausted, retryDelayMs } from './retryPolicy.js';

export interface BatchFailureOutcome {
  delivered: number[];
  retries: (FailedDelivery & { nextAttemptAt: number })[];
  dead: FailedDelivery[];
  /** Every failure was the destination refusing those events for good: the endpoint itself works. */
  perEventRejections: boolean;
}

/**
 * What a failed write means for each delivery of the batch.
 *
 * A SinkPartialFailureError names the failed events; any other error fails the whole batch
 * (SinkRejectedError for good). A failed event is retried after a full-jitter backoff, or becomes
 * a dead letter when rejected for good or out of attempts or age. An event written after a failed
 * event of the same object is not counted as delivered: it is sent again after that one, so the
 * last copy of each event reaches the destination in order (at the price of a duplicate).
 */
export function classifyBatchFailure(
  batch: readonly PendingDelivery[],
  error: unknown,
  now: number,
  retry: RetryConfig,
  random: (() => number) | undefined,
  poison: { strikes: number; lastSuccessAt: number | null },
): BatchFailureOutcome {
  const message = describeError(error);
  const outcome: BatchFailureOutcome = {
    delivered: [],
    retries: [],
    dead: [],
    perEventRejections: error instanceof SinkPartialFailureError,
  };
  const failedKeys = new Set<string>();
  for (const d of batch) {
    const key = logKey(d);
    const failure: ItemFailure | undefined =
      error instanceof SinkPartialFailureError
        ? error.failures.get(d.eventId)
        : { error: message, permanent: error instanceof SinkRejectedError };
    if (!failure) {
      // Held behind a failed event of the same object: neither delivered nor failed.
      if (!failedKeys.has(key)) outcome.delivered.push(d.seq);
      continue;
    }
    failedKeys.add(key);
    if (!failure.permanent) outcome.perEventRejections = false;
    const attempts = d.attempts + 1;
    const detail = { status: failure.status, response: failure.response };
    if (failure.permanent) {
      outcome.dead.push({ seq: d.seq, error: `rejected: ${failure.error}`, ...detail });
    } else if (
      isPoison({
        batchLength: batch.length,
        attempts,
        strikes: poison.strikes,
        firstAttemptAt: d.firstAttemptAt,
        lastSuccessAt: poison.lastSuccessAt,
      })
    ) {
      outcome.dead.push({
        seq: d.seq,
        error: `poison: failed alone ${attempts} times while the destination took other events: ${failure.error}`,
        ...detail,
      });
    } else if (isExhausted(attempts, d.firstAttemptAt ?? now, now, retry)) {
      outcome.dead.push({ seq: d.seq, error: `gave up after ${attempts} attempts: ${failure.error}`, ...detail });
    } else {
      outcome.retries.push({
        seq: d.seq,
        nextAttemptAt: now + retryDelayMs(attempts, retry, failure.retryAfterMs, random),
        error: failure.error,
        ...detail,
      });
    }
  }
  return outcome;
}

/**
 * Records what a failed batch came to: delivered events settled, retries scheduled, dead letters
 * marked, in the store and in the worker's window of pending deliveries alike.
 */
export async function recordBatchFailure(
  outbox: OutboxStore,
  window: PendingWindow,
  sink: string,
  batch: readonly PendingDelivery[],
  outcome: BatchFailureOutcome,
  now: number,
): Promise<void> {
  await outbox.markDelivered(sink, outcome.delivered, now);
  await outbox.scheduleRetry(sink, outcome.retries, now);
  await outbox.markDead(sink, outcome.dead, now);
  const bySeq = new Map(batch.map((d) => [d.seq, d]));
  const settled = new Set([...outcome.delivered, ...outcome.dead.map((d) => d.seq)]);
  window.settle(batch.filter((d) => settled.has(d.seq)));
  for (const r of outcome.retries) {
    const row = bySeq.get(r.seq);
    if (row) window.retryLater(row, r.nextAttemptAt, now);
  }
}
