import type pg from 'pg';
import type { LeaseClaim } from '../../cluster/writeFence.js';
import type { LogKind } from '../../logs.js';
import { simpleQueryResults } from '../../simpleQueryResults.js';
import type { StoreActivity } from '../storeActivity.js';
import { isStorageError, StoreUnavailableError } from '../storeHealth.js';
import type { RateEstimateRow, SortOrder } from '../storeRecords.js';
import { endedSession, isConnectionFailure, readOnlySession } from './connectionFailure.js';
import { executeOnClient } from './executeText.js';
import { rateColumns } from './rateEstimates.js';
import type { PoolGate } from './poolGate.js';
import { isUnknownStatement, isUnusableStatement } from './statementNames.js';
import { storableText } from './storableText.js';

/** Most advances one statement of an AdvanceBatch writes; more wait for the next. */
const MAX_BATCHED_ADVANCES = 500;

/** A poll's cursor write when it read nothing (WatchedLogs.advanceAlone), under its tenant's lease. */
export interface BatchedAdvance {
  readonly claim: LeaseClaim;
  /** The fence's statement timeout: the batch's statement holds every lease row it checked until it ends. */
  readonly statementTimeoutMs: number;
  readonly log: LogKind;
  readonly objectId: string;
  readonly windowEnd: number;
  readonly now: number;
  readonly pruneSeenBefore?: number;
  readonly sortOrder?: SortOrder;
  /**
   * The tenant's deferred state riding with this advance (PostgresDeferredState.take), written
   * only if its lease held; the caller (TenantDb.advanceInBatch) tells the state how it ended.
   */
  readonly riding?: {
    readonly rates: readonly RateEstimateRow[];
    readonly meta: readonly (readonly [string, string])[];
  };
}

/**
 * How a batched advance ended: written under its lease (`held`), refused because the claim is no
 * longer the tenant's valid lease (`lost`), not taken because another transaction held its lease
 * row locked (`busy`: a change of holder under way), or not written because the statement failed
 * for one of its rows (`alone`: splitsBatch); the caller writes a `busy` or `alone` advance alone.
 */
export type AdvanceOutcome = 'held' | 'lost' | 'busy' | 'alone';

/** SQLSTATE of a lock not granted within lock_timeout, or at once under NOWAIT (lock_not_available). */
const LOCK_NOT_AVAILABLE = '55P03';

function isLockNotAvailable(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === LOCK_NOT_AVAILABLE;
}

/** SQLSTATEs of a statement failed by some of its rows, not by the store (splitsBatch). */
const ROW_TROUBLE_STATE = /^(55P03|40P01|40001|22...|23...)$/;

/**
 * Whether a batch's statement failed for something one of its rows brought, which its advances
 * written alone would meet only in that row's statement: a row another transaction holds locked
 * past the batch's lock_timeout (55P03), a deadlock (40P01) or serialization failure (40001), a
 * value or constraint error (classes 22, 23). The store's failures (connection lost or ended by
 * the server, the database away, full, read-only or not answering within statement_timeout) fail
 * the batch as one, at once: written alone they would fail the same, one statement each.
 */
export function splitsBatch(error: unknown): boolean {
  if (isConnectionFailure(error) || endedSession(error) || isStorageError(error)) return false;
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && ROW_TROUBLE_STATE.test(code);
}

interface Pending {
  readonly advance: BatchedAdvance;
  resolve(outcome: AdvanceOutcome): void;
  reject(error: unknown): void;
}

/**
 * The advances the next statement takes, and those left for the one after: at most `max`, in the
 * order asked. A log polls one read at a time and awaits its advance, so one log appears at most
 * once; should it appear twice all the same (a caller that did not wait), its later advance is
 * taken in the next batch, never before the earlier one in the same statement (an UPDATE touches
 * a row once, whichever of two joined rows it picks).
 */
export function nextAdvanceBatch<T extends { advance: BatchedAdvance }>(
  pending: readonly T[],
  max: number,
): { take: T[]; rest: T[] } {
  const take: T[] = [];
  const rest: T[] = [];
  const keys = new Set<string>();
  for (const item of pending) {
    const { claim, log, objectId } = item.advance;
    const key = `${claim.tenant}\u0000${log}\u0000${objectId}`;
    // A tenant's deferred state once per statement: an upsert may touch a row once.
    const ridingKey = item.advance.riding ? `${claim.tenant}\u0000riding` : undefined;
    if (take.length >= max || keys.has(key) || (ridingKey !== undefined && keys.has(ridingKey))) rest.push(item);
    else {
      keys.add(key);
      if (ridingKey !== undefined) keys.add(ridingKey);
      take.push(item);
    }
  }
  return { take, rest };
}

/**
 * The cursor writes of the polls that read nothing (most polls), of every tenant of a backend, in
 * one fenced statement per batch (docs/leases.md, "Fencing every write"). One batch is in flight
 * at a time and the advances asked meanwhile go in the next (self-clocking: no timer). The poll
 * awaits its advance, so a batched advance never overtakes a later write of the same log, and a
 * stop or handover that awaits the poll awaits its advance. Nothing is held for a retry (the next
 * poll repeats the read), and what waits is bounded by the polls under way.
 */
export class AdvanceBatch {
  private pending: Pending[] = [];
  private sending = false;

  constructor(
    private readonly gate: PoolGate,
    private readonly activity: StoreActivity,
  ) {}

  /** Resolves once the statement that took `advance` ended, with how it ended for it (AdvanceOutcome). */
  write(advance: BatchedAdvance): Promise<AdvanceOutcome> {
    return new Promise<AdvanceOutcome>((resolve, reject) => {
      this.pending.push({ advance, resolve, reject });
      if (!this.sending) {
        this.sending = true;
        // The advances of this turn join the first batch.
        setImmediate(() => {
          this.sendAll().catch((error: unknown) => {
            // Its one error route (sendAll answers each batch itself; this is for a fault of its own).
            const pending = this.pending;
            this.pending = [];
            this.sending = false;
            for (const item of pending) item.reject(error);
          });
        });
      }
    });
  }

  /** Sends batches while advances wait; never throws (each batch answers its own advances). */
  private async sendAll(): Promise<void> {
    while (this.pending.length > 0) {
      const { take, rest } = nextAdvanceBatch(this.pending, MAX_BATCHED_ADVANCES);
      this.pending = rest;
      try {
        const found = await this.send(take.map((item) => item.advance));
        for (const item of take) item.resolve(found.get(heldKey(item.advance.claim)) ?? 'lost');
      } catch (error) {
        // Each written alone, once (never batched again): only the one in trouble fails, with its own
        // error; one whose cursor row is held locked fails at once, without waiting for it alone.
        if (error instanceof CursorRowsLocked)
          for (const item of take) {
            const refused = error.refusal(item.advance);
            if (refused) item.reject(refused);
            else item.resolve('alone');
          }
        else if (splitsBatch(error)) for (const item of take) item.resolve('alone');
        else for (const item of take) item.reject(error);
      }
    }
    this.sending = false;
  }

  /** One transaction: its bound, the statement, COMMIT. The claims found `held` or `busy`, by key. */
  private async send(advances: readonly BatchedAdvance[]): Promise<Map<string, AdvanceOutcome>> {
    try {
      return await this.attempt(advances, true);
    } catch (error) {
      // A statement prepared before a schema change, or a name the server forgot: once more, unnamed.
      if (!isUnusableStatement(error)) throw error;
      if (isUnknownStatement(error)) this.gate.names.unknownStatement();
      return this.attempt(advances, false);
    }
  }

  private async attempt(advances: readonly BatchedAdvance[], prepared: boolean): Promise<Map<string, AdvanceOutcome>> {
    const client = await this.gate.connect('run');
    const ignore = (): void => undefined;
    client.on('error', ignore);
    let broken: Error | undefined;
    const bound = Math.max(1, Math.floor(Math.min(...advances.map((a) => a.statementTimeoutMs))));
    // A row of the statement locked by another transaction fails it as lock_not_available before
    // the statement's bound (splitsBatch), which is left to a database too slow to answer.
    const lockWaitMs = Math.max(1, Math.floor(bound / 2));
    const bounds = `SET LOCAL statement_timeout = ${bound}; SET LOCAL lock_timeout = ${lockWaitMs}`;
    const params = advanceParams(advances);
    const execute = prepared ? this.executeOn(client, params) : undefined;
    this.activity.transactions++;
    try {
      let rows: HeldRow[];
      if (execute !== undefined) {
        // Prepared on this connection: one round trip, a simple query being one implicit
        // transaction, so the bound covers the statement and the lease rows' locks end with it.
        this.activity.statements++;
        rows = simpleQueryResults(await client.query<HeldRow>(`${bounds}; ${execute}`)).at(-1)?.rows ?? [];
      } else {
        // Not yet: a transaction, which prepares it here for the next time.
        this.activity.statements += 3;
        await client.query(`BEGIN; ${bounds}; SET LOCAL idle_in_transaction_session_timeout = ${bound}`);
        rows = (
          await client.query<HeldRow>(
            prepared ? this.gate.names.statement(ADVANCE_SQL, params) : { text: ADVANCE_SQL, values: params },
          )
        ).rows;
        await client.query('COMMIT');
      }
      return new Map(
        rows.map((row) => [
          heldKey({ tenant: row.tenant, holder: row.holder, epoch: Number(row.epoch) }),
          row.held ? 'held' : 'busy',
        ]),
      );
    } catch (error) {
      // As TenantDb: a connection that failed, that the server ended, that holds a stale or
      // unknown statement, or whose session is read-only is destroyed; a simple query rolled back on its own.
      const gone =
        isConnectionFailure(error) || endedSession(error) || isUnusableStatement(error) || readOnlySession(error);
      if (gone) broken = error as Error;
      else if (execute === undefined)
        await client.query('ROLLBACK').catch((rollbackError: unknown) => {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        });
      if (broken === undefined && isLockNotAvailable(error)) {
        const probed = (async () => {
          if (await this.lockedTable(client)) return 'table' as const;
          return this.lockedCursors(client, advances);
        })();
        const locked = await probed.catch((probeError: unknown) => {
          if (isConnectionFailure(probeError) || endedSession(probeError)) broken = probeError as Error;
          return undefined;
        });
        if (locked === 'table')
          throw new StoreUnavailableError(
            'a table of the store that the batched cursor writes need is locked by another session ' +
              `(LOCK TABLE, a migration's ALTER TABLE) past ${lockWaitMs} ms; polling pauses until it is released ` +
              '(pg_locks names the session holding it)',
            error,
          );
        if (locked && locked.size > 0) throw new CursorRowsLocked(locked, lockWaitMs, error);
      }
      throw error;
    } finally {
      client.off('error', ignore);
      client.release(broken);
    }
  }

  /**
   * Whether a lock on a whole table the batch's statement writes (or locks rows of) stands in its
   * way, asked without waiting (NOWAIT) after the statement ran out its lock_timeout: a row lock
   * holds up only its tenant's advance (written alone: splitsBatch), but a table lock would hold up
   * each advance written alone as well, each waiting out its bound on a pool connection, so then the
   * batch fails as one. The modes are the statement's own, taken for the probe's implicit
   * transaction only: they conflict with SHARE and stronger (LOCK TABLE, ALTER TABLE, CREATE INDEX
   * without CONCURRENTLY), and with such a request waiting in the queue.
   */
  private async lockedTable(client: pg.PoolClient): Promise<boolean> {
    this.activity.statements++;
    try {
      await client.query(
        'LOCK TABLE changefeed_leases IN ROW SHARE MODE NOWAIT; ' +
          'LOCK TABLE watched_logs, seen_entries, rate_estimates, meta IN ROW EXCLUSIVE MODE NOWAIT',
      );
      return false;
    } catch (error) {
      if (isLockNotAvailable(error)) return true;
      throw error;
    }
  }

  /**
   * The cursor rows of `advances` another transaction holds locked now, asked without waiting
   * (SKIP LOCKED, in the UPDATE's own lock mode; the locks taken end with the statement), by
   * cursorKey. A row that does not exist is not among them.
   */
  private async lockedCursors(client: pg.PoolClient, advances: readonly BatchedAdvance[]): Promise<Set<string>> {
    this.activity.statements++;
    const { rows } = await client.query<{ tenant: string; log: string; object_id: string }>(
      `WITH asked AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS a (tenant, log, object_id)),
        free AS (
          SELECT l.tenant, l.log, l.object_id FROM watched_logs l JOIN asked a USING (tenant, log, object_id)
          FOR NO KEY UPDATE OF l SKIP LOCKED
        )
      SELECT l.tenant, l.log, l.object_id FROM watched_logs l JOIN asked a USING (tenant, log, object_id)
      WHERE NOT EXISTS (SELECT FROM free f WHERE (f.tenant, f.log, f.object_id) = (l.tenant, l.log, l.object_id))`,
      [advances.map((a) => a.claim.tenant), advances.map((a) => a.log), advances.map((a) => storableText(a.objectId))],
    );
    return new Set(rows.map((row) => cursorKey(row.tenant, row.log, row.object_id)));
  }

  /** The EXECUTE of the batch's statement on `client` (executeOnClient), if `client` prepared it. */
  private executeOn(client: pg.PoolClient, params: readonly unknown[]): string | undefined {
    const { name } = this.gate.names.statement(ADVANCE_SQL, params);
    return name === undefined
      ? undefined
      : executeOnClient(client, this.gate.names.executable, name, ADVANCE_SQL, params);
  }
}

interface HeldRow {
  tenant: string;
  holder: string;
  epoch: number | string;
  /** False: valid in the statement's snapshot, but its row was locked by another transaction. */
  held: boolean;
}

function cursorKey(tenant: string, log: string, storedObjectId: string): string {
  return `${tenant}\u0000${log}\u0000${storedObjectId}`;
}

/**
 * A batch that ran out its lock_timeout on cursor rows another transaction holds (lockedCursors):
 * the advances of those rows are refused at once, as the store's problem that readiness shows,
 * since written alone each would only wait out its bound on a pool connection (a session holding
 * every cursor row: each tenant's, tick after tick); the others are written alone.
 */
class CursorRowsLocked extends Error {
  constructor(
    private readonly locked: ReadonlySet<string>,
    private readonly waitedMs: number,
    cause: unknown,
  ) {
    super('cursor rows locked by another transaction', { cause });
  }

  /** Why `advance` is refused, or undefined when its row was free (it is written alone). */
  refusal(advance: BatchedAdvance): StoreUnavailableError | undefined {
    if (!this.locked.has(cursorKey(advance.claim.tenant, advance.log, storableText(advance.objectId))))
      return undefined;
    return new StoreUnavailableError(
      `the cursor row of log ${advance.log} ${JSON.stringify(advance.objectId)} of tenant ` +
        `"${advance.claim.tenant}" is locked by another session past ${this.waitedMs} ms; its polls pause ` +
        'until it is released (pg_locks names the session holding it)',
      this.cause,
    );
  }
}

function heldKey(claim: LeaseClaim): string {
  return `${claim.tenant}\u0000${claim.holder}\u0000${claim.epoch}`;
}

function advanceParams(advances: readonly BatchedAdvance[]): unknown[] {
  const rates = advances.flatMap((a) => (a.riding?.rates ?? []).map((row) => ({ tenant: a.claim.tenant, row })));
  const meta = advances.flatMap((a) =>
    (a.riding?.meta ?? []).map(([key, value]) => ({ tenant: a.claim.tenant, key, value })),
  );
  return [
    advances.map((a) => a.claim.tenant),
    advances.map((a) => a.claim.holder),
    advances.map((a) => a.claim.epoch),
    advances.map((a) => a.log),
    // As registered (storableText): a NUL, which PostgreSQL's text cannot hold, would fail the
    // whole statement, so every tenant's advance of the batch, at every poll of that log.
    advances.map((a) => storableText(a.objectId)),
    advances.map((a) => a.windowEnd),
    advances.map((a) => a.now),
    advances.map((a) => a.pruneSeenBefore ?? null),
    advances.map((a) => a.sortOrder ?? null),
    rates.map((r) => r.tenant),
    ...rateColumns(rates.map((r) => r.row)),
    meta.map((m) => m.tenant),
    meta.map((m) => storableText(m.key)),
    meta.map((m) => storableText(m.value)),
  ];
}

/**
 * WatchedLogs.advanceAlone for many tenants: `held` is leaseHeldCte for every claim at once, its
 * rows locked in tenant order (never in opposite orders by two batches or a takeover), and only
 * a held claim's advances prune and write. SKIP LOCKED, since waiting for one row would hold up
 * every tenant's advance: `valid`, the same test without a lock, tells a claim whose row it passed
 * over (`held` false: written alone) from a lost one (no row). The text is fixed whatever the
 * batch's size, so it is prepared once per connection.
 */
const ADVANCE_SQL = `WITH u AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[], $5::text[], $6::float8[], $7::float8[],
      $8::float8[], $9::text[])
      AS u (tenant, holder, epoch, log, object_id, window_end, now, prune_before, sort_order)
  ),
  valid AS (
    SELECT l.tenant, l.holder, l.epoch FROM changefeed_leases l
    WHERE (l.tenant, l.holder, l.epoch) IN (SELECT tenant, holder, epoch FROM u) AND l.expires_at > clock_timestamp()
  ),
  held AS (
    SELECT l.tenant, l.holder, l.epoch FROM changefeed_leases l
    WHERE (l.tenant, l.holder, l.epoch) IN (SELECT tenant, holder, epoch FROM u) AND l.expires_at > clock_timestamp()
    ORDER BY l.tenant
    FOR KEY SHARE SKIP LOCKED
  ),
  written AS (
    SELECT u.* FROM u JOIN held h ON h.tenant = u.tenant AND h.holder = u.holder AND h.epoch = u.epoch
  ),
  pruned AS (
    DELETE FROM seen_entries s USING written w
    WHERE w.prune_before IS NOT NULL AND s.tenant = w.tenant AND s.log = w.log AND s.object_id = w.object_id
      AND COALESCE(s.performed_at, s.seen_at) < w.prune_before
  ),
  advanced AS (
    UPDATE watched_logs l SET window_end = w.window_end, last_poll_at = w.now, last_success_at = w.now,
      last_error = NULL, consecutive_failures = 0, sort_order = COALESCE(w.sort_order, l.sort_order)
    FROM written w WHERE l.tenant = w.tenant AND l.log = w.log AND l.object_id = w.object_id
  ),
  rated AS (
    INSERT INTO rate_estimates (tenant, log, object_id, events, sessions, hours, last_event_at, updated_at, poll_cost,
      planned_rate, next_poll_at)
    SELECT r.* FROM unnest($10::text[], $11::text[], $12::text[], $13::float8[], $14::float8[], $15::float8[],
      $16::float8[], $17::float8[], $18::float8[], $19::float8[], $20::float8[])
      AS r (tenant, log, object_id, events, sessions, hours, last_event_at, updated_at, poll_cost, planned_rate,
        next_poll_at)
    WHERE r.tenant IN (SELECT tenant FROM held)
    ON CONFLICT (tenant, log, object_id) DO UPDATE SET events = excluded.events, sessions = excluded.sessions,
      hours = excluded.hours, last_event_at = excluded.last_event_at, updated_at = excluded.updated_at,
      poll_cost = excluded.poll_cost, planned_rate = excluded.planned_rate, next_poll_at = excluded.next_poll_at
  ),
  noted AS (
    INSERT INTO meta (tenant, key, value)
    SELECT m.* FROM unnest($21::text[], $22::text[], $23::text[]) AS m (tenant, key, value)
    WHERE m.tenant IN (SELECT tenant FROM held)
    ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value
  )
  SELECT tenant, holder, epoch, true AS held FROM held
  UNION ALL
  SELECT v.tenant, v.holder, v.epoch, false FROM valid v
  WHERE NOT EXISTS (SELECT FROM held h WHERE h.tenant = v.tenant AND h.holder = v.holder AND h.epoch = v.epoch)`;
