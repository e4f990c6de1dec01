/**
 * How much work a store engine asked of its database since the process opened it, for
 * `changefeed_store_transactions_total` and `changefeed_store_statements_total`: what a poll or a
 * delivered batch costs the database, counted where it is sent, so a shared database's own
 * statistics (every client of it at once) are not needed to tell.
 *
 * A transaction is an explicit one (BEGIN ... COMMIT or ROLLBACK) or a statement sent on its own,
 * which the database runs as a transaction of its own. A statement is one round trip to the
 * database (PostgreSQL: BEGIN and COMMIT included) or one execution of a prepared statement (SQLite).
 */
export class StoreActivity {
  transactions = 0;
  statements = 0;
  /** Checkouts that waited for a connection of a full pool (PostgreSQL), and their waits' sum. */
  poolWaits = 0;
  poolWaitSeconds = 0;
  /** Of those, the waits given up (STORE_BUSY): the pool stayed full past the store's wait limit. */
  poolBusy = 0;
  /**
   * Fenced writes given up (STORE_BUSY) because their tenant's lease row stayed locked by another
   * transaction (a change of holder under way) past the fence's bound (PostgreSQL).
   */
  leaseRowBusy = 0;
  /** Checkouts waiting for a connection now (PostgreSQL), set by the engine that has a pool. */
  poolWaiting: () => number = () => 0;

  /** The `engine` label of the store's metrics. */
  constructor(readonly engine: 'sqlite' | 'postgres') {}

  /** One statement outside any transaction: a transaction of its own. */
  statementAlone(): void {
    this.transactions++;
    this.statements++;
  }
}
