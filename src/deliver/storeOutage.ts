import type { Logger } from 'pino';
import { describeError } from '../errors.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import type { PendingDelivery } from '../store/storeRecords.js';

/**
 * A sink worker's view of a store that cannot be written (a full or read-only disk). The worker
 * pauses instead of dying; batches the destination took while the store could not record it are
 * held here and recorded once it can, rather than sent again. A crash before then sends them
 * again on restart: at least once, as always.
 */
export class StoreOutage {
  private readonly unrecorded: PendingDelivery[][] = [];

  constructor(
    private readonly sink: string,
    private readonly store: ChangefeedStore,
    private readonly logger: Logger,
  ) {}

  /** Records a storage error (true), or says it is something else (false). */
  failed(error: unknown): boolean {
    const first = this.store.health.problem === undefined;
    if (!this.store.health.record(error, this.store.location)) return false;
    if (first)
      this.logger.warn(
        { sink: this.sink, err: describeError(error) },
        'the store cannot be written: delivery pauses until it can',
      );
    return true;
  }

  /** A batch the destination took that the store could not mark delivered. */
  hold(batch: PendingDelivery[]): void {
    this.unrecorded.push(batch);
  }

  /** Records what is held; false while the store still cannot be written. */
  async flush(now: number): Promise<boolean> {
    while (this.unrecorded.length > 0) {
      try {
        await this.store.outbox.markDelivered(
          this.sink,
          (this.unrecorded[0] ?? []).map((d) => d.seq),
          now,
        );
      } catch (error) {
        if (!this.failed(error)) throw error;
        return false;
      }
      this.unrecorded.shift();
      this.store.health.clear();
    }
    return true;
  }
}
