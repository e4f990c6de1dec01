/** How old a tenant's dead-letter re-queue count may be (its engine asks every 500 ms). */
export const REQUEUE_COUNT_MAX_AGE_MS = 400;

/** One tenant's count as the shared read returns it. */
export interface RequeueCountRow {
  tenant: string;
  value: string;
}

/** Reads the counts of `tenants` (one statement). */
type ReadRequeueCounts = (tenants: readonly string[]) => Promise<RequeueCountRow[]>;

/**
 * Every tenant's dead-letter re-queue count, read for all the tenants of this process in one
 * statement, on either engine. Each tenant's delivery engine asks twice a second, to notice a
 * `dead-letters retry` run in another process: one query each was 2,000 statements a second at
 * 1,000 tenants, most of what a replica asked of the database (on SQLite too, where it was three
 * of every four statements the daemon ran). A read younger than `maxAgeMs` answers from memory,
 * and callers that ask while a read is under way share it.
 */
export class RequeueCounts {
  private counts = new Map<string, number>();
  /** The tenants that asked, and the ones the last completed read was for. */
  private readonly tenants = new Set<string>();
  private readFor = new Set<string>();
  private readAt = Number.NEGATIVE_INFINITY;
  private generation = 0;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly maxAgeMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** `tenant`'s count, at most `maxAgeMs` old; `read` runs the shared statement when one is due. */
  async of(tenant: string, read: ReadRequeueCounts): Promise<number> {
    this.tenants.add(tenant);
    // Twice at most: a read already under way may have started before this tenant first asked.
    for (let reads = 0; reads < 2; reads++) {
      if (this.readFor.has(tenant) && this.now() - this.readAt < this.maxAgeMs) break;
      await this.refresh(read);
    }
    return this.counts.get(tenant) ?? 0;
  }

  /** A re-queue made by this process: the next question reads again rather than answer stale. */
  invalidate(): void {
    this.generation++;
    this.readAt = Number.NEGATIVE_INFINITY;
  }

  private refresh(read: ReadRequeueCounts): Promise<void> {
    this.reading ??= (async () => {
      const startedAt = this.now();
      const generation = this.generation;
      const tenants = [...this.tenants];
      try {
        const rows = await read(tenants);
        this.counts = new Map(rows.map((r) => [r.tenant, Number(r.value)]));
        this.readFor = new Set(tenants);
        // A re-queue made while the read was under way may not be in it.
        if (generation === this.generation) this.readAt = startedAt;
      } finally {
        this.reading = undefined;
      }
    })();
    return this.reading;
  }
}
