import { Counter, type Registry } from 'prom-client';
import type { StoreActivity } from '../store/storeActivity.js';

type Counted = 'transactions' | 'statements';

/**
 * What the store engine asked of its database (StoreActivity), as counters that live as long as
 * the process: a daemon rebuilt around another backend (a reload) goes on from what was counted.
 */
export class StoreMetrics {
  private activity: StoreActivity | undefined;
  /** What the watched activity held at the last scrape, per counted kind. */
  private readonly seen: Record<Counted, number> = { transactions: 0, statements: 0 };

  constructor(registry: Registry) {
    const registers = [registry];
    const transactions: Counter<'engine'> = new Counter({
      name: 'changefeed_store_transactions_total',
      help:
        'Transactions the store sent to its database, by engine: explicit ones and statements sent on their ' +
        'own (each a transaction of its own); with changefeed_api_requests_total, what a request costs the database.',
      labelNames: ['engine'],
      registers,
      collect: () => this.add(transactions, 'transactions'),
    });
    const statements: Counter<'engine'> = new Counter({
      name: 'changefeed_store_statements_total',
      help:
        'Statements the store sent to its database, by engine (PostgreSQL: round trips, BEGIN, the lease check ' +
        'and COMMIT included).',
      labelNames: ['engine'],
      registers,
      collect: () => this.add(statements, 'statements'),
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
    this.seen.transactions = 0;
    this.seen.statements = 0;
  }
}
