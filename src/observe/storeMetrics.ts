import { Counter, Gauge, type Registry } from 'prom-client';
import type { StoreActivity } from '../store/storeActivity.js';

type Counted = 'transactions' | 'statements' | 'poolWaits' | 'poolWaitSeconds' | 'poolBusy' | 'leaseRowBusy';

/** Each counted kind of StoreActivity: its counter's name and help. */
const COUNTERS: readonly (readonly [Counted, string, string])[] = [
  [
    'transactions',
    'changefeed_store_transactions_total',
    'Transactions the store sent to its database, by engine: explicit ones and statements sent on their ' +
      'own (each a transaction of its own); with changefeed_api_requests_total, what a request costs the database.',
  ],
  [
    'statements',
    'changefeed_store_statements_total',
    'Statements the store sent to its database, by engine (PostgreSQL: round trips, BEGIN, the lease check ' +
      'and COMMIT included).',
  ],
  [
    'poolWaits',
    'changefeed_store_pool_waits_total',
    "Statements and transactions of the tenants that waited for a connection of the store's full pool " +
      '(PostgreSQL; a start goes ahead of the running tenants), given up or not.',
  ],
  [
    'poolWaitSeconds',
    'changefeed_store_pool_wait_seconds_total',
    "Time spent waiting for a connection of the store's full pool, summed over the waits: divided by " +
      'changefeed_store_pool_waits_total, the mean wait.',
  ],
  [
    'poolBusy',
    'changefeed_store_pool_busy_total',
    "Waits for a connection of the store's pool given up (STORE_BUSY): the pool stayed full past the wait " +
      'limit; the work is tried again shortly. Back-pressure of a replica asking more than store.maxConnections ' +
      'carry, not an outage.',
  ],
  [
    'leaseRowBusy',
    'changefeed_store_lease_row_busy_total',
    "Fenced writes given up (STORE_BUSY) because their tenant's lease row stayed locked by another transaction " +
      '(a change of holder under way, or a session holding it FOR UPDATE) past the fence bound; the write is tried ' +
      'again shortly. A steady rate means a session keeps lease rows locked (PostgreSQL).',
  ],
];

/**
 * What the store engine asked of its database (StoreActivity), as counters that live as long as
 * the process: a daemon rebuilt around another backend (a reload) goes on from what was counted.
 */
export class StoreMetrics {
  private activity: StoreActivity | undefined;
  /** What the watched activity held at the last scrape, per counted kind. */
  private readonly seen = Object.fromEntries(COUNTERS.map(([kind]) => [kind, 0])) as Record<Counted, number>;

  constructor(registry: Registry) {
    const registers = [registry];
    for (const [kind, name, help] of COUNTERS) {
      const counter: Counter<'engine'> = new Counter({
        name,
        help,
        labelNames: ['engine'],
        registers,
        collect: () => this.add(counter, kind),
      });
    }
    const poolWaiting: Gauge<'engine'> = new Gauge({
      name: 'changefeed_store_pool_waiting',
      help: "Statements and transactions waiting now for a connection of the store's full pool (PostgreSQL).",
      labelNames: ['engine'],
      registers,
      collect: () => {
        const activity = this.activity;
        if (activity) poolWaiting.set({ engine: activity.engine }, activity.poolWaiting());
      },
    });
  }

  /** Adds to `counter` what the watched activity counted since the last scrape. */
  private add(counter: Counter<'engine'>, kind: Counted): void {
    const activity = this.activity;
    if (!activity) return;
    const delta = activity[kind] - this.seen[kind];
    this.seen[kind] = activity[kind];
    if (delta > 0) counter.inc({ engine: activity.engine }, delta);
  }

  /** The backend of the daemon serving now; its counts so far are added at the next scrape. */
  watch(activity: StoreActivity): void {
    if (activity === this.activity) return;
    this.activity = activity;
    for (const kind of Object.keys(this.seen) as Counted[]) this.seen[kind] = 0;
  }
}
