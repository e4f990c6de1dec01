/** One tenant's count as the shared read returns it. */
export interface RequeueCountRow {
  tenant: string;
  value: string;
}

/** Reads the counts of `tenants` (one statement). */
type ReadRequeueCounts = (tenants: readonly string[]) => Promise<RequeueCountRow[]>;

/**
 * Every tenant's dead-letter re-queue count, read for all the tenants of this process in one
 * statement, on either engine: each delivery engine watches its count to notice a `dead-letters
 * retry` run in another process. The tenants that ask in the same turn of the event loop share
 * one read, and every answer comes from a read that began after its question: a read already
 * under way when a tenant asks serves the next question, not that one. No time is involved, so
 * the engines' clock (virtual in tests) is the only one that paces the reads.
 */
export class RequeueCounts {
  private counts = new Map<string, number>();
  /** Every tenant that asked: each read is for all of them. */
  private readonly tenants = new Set<string>();
  /** The read under way. */
  private current: Promise<void> | undefined;
  /** The read that questions asked now will get: it begins once the current one ended. */
  private next: Promise<void> | undefined;

  /** `tenant`'s count, from a read that began after this question; `read` runs the shared statement. */
  async of(tenant: string, read: ReadRequeueCounts): Promise<number> {
    this.tenants.add(tenant);
    await (this.next ??= this.readAfterCurrent(read));
    return this.counts.get(tenant) ?? 0;
  }

  private async readAfterCurrent(read: ReadRequeueCounts): Promise<void> {
    // At least one turn of the event loop, so the questions of the same turn join this read.
    await this.current?.catch(() => undefined);
    this.next = undefined;
    const reading = read([...this.tenants]).then((rows) => {
      this.counts = new Map(rows.map((r) => [r.tenant, Number(r.value)]));
    });
    this.current = reading;
    try {
      await reading;
    } finally {
      if (this.current === reading) this.current = undefined;
    }
  }
}
