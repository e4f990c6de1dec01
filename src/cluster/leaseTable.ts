import type pg from 'pg';
import { parseAdvertiseUrl } from './clusterConfig.js';

/** A lease as `status` and `tenants list` show it. */
export interface LeaseRow {
  tenant: string;
  /** The replica holding it; undefined once released. */
  holder: string | undefined;
  epoch: number;
  /** Milliseconds until it expires on the database's clock; 0 or less: expired (free to take). */
  expiresInMs: number;
  /** Whether the holder still heartbeats. */
  holderLive: boolean;
  /**
   * Milliseconds until the holder's last heartbeat is a lease old and it stops counting as live
   * (0 or less: not live, or no holder), on the database's clock.
   */
  holderLiveForMs: number;
  /**
   * Where the holder's feed is reached (its `cluster.advertiseUrl`); undefined when it advertises
   * none, is not a replica (a command holding the lease), or wrote something that is not a URL.
   */
  holderUrl: string | undefined;
  /** Where the holder's health server is reached (`cluster.advertiseHealthUrl`), for `status`; undefined likewise. */
  holderHealthUrl: string | undefined;
}

/** Where a replica is reached, recorded with its heartbeat (both undefined when not set). */
export interface AdvertisedUrls {
  /** Its feed listener: `cluster.advertiseUrl`. */
  feedUrl?: string | undefined;
  /** Its health server (`/readyz`): `cluster.advertiseHealthUrl`. */
  healthUrl?: string | undefined;
}

/** A lease this replica got or renewed, with the database's word on when it expires. */
export interface GrantedLease {
  tenant: string;
  epoch: number;
  expiresAt: Date;
}

export interface LeaseTableOptions {
  /** How long a lease lasts without renewal (cluster.leaseSeconds in ms). */
  leaseMs: number;
  /**
   * Longest wait for one statement, so a database gone silent (a partition) fails a round
   * instead of hanging it; the client that timed out is discarded by the pool. Default: a third
   * of the lease.
   */
  queryTimeoutMs?: number;
}

/**
 * The acquisition's condition on the key of a wanted tenant (`w.key_fingerprint`): no other
 * tenant's valid lease (`held_keys`, read once per statement) polls it. A NULL fingerprint (a
 * caller that does not know the key) equals nothing, so it checks nothing. Written without an OR,
 * so PostgreSQL answers it for all the wanted tenants in one hash anti-join, not a scan of the
 * table per wanted tenant (docs/scaling.md).
 */
const KEY_FREE = `NOT EXISTS (
           SELECT 1 FROM held_keys AS other
            WHERE other.key_fingerprint = w.key_fingerprint AND other.tenant <> w.tenant)`;

/**
 * The renewal of the leases of `h` (tenant, epoch, key_fingerprint) that `$1` still validly
 * holds and that pass `keyCondition` (over `h` as the asked tenant and `l` as its row). Rows
 * another transaction holds locked (FOR UPDATE or FOR NO KEY UPDATE: a release, an acquisition
 * looking at the row, an operator's session) are skipped, not waited for (LeaseTable). The
 * answer's `locked` rows are the asked leases, valid and still `$1`'s on the statement's snapshot,
 * that were skipped so: neither renewed nor refused.
 */
function renewal(keyCondition: string): string {
  return `WITH held_keys AS (
         SELECT k.tenant, k.key_fingerprint FROM changefeed_leases AS k
          WHERE k.key_fingerprint IS NOT NULL AND k.holder IS NOT NULL AND k.expires_at > clock_timestamp()
       ), h AS (
         SELECT * FROM unnest($2::text[], $3::bigint[], $5::text[]) AS h(tenant, epoch, key_fingerprint)
       ), ours AS (
         SELECT l.tenant FROM changefeed_leases AS l JOIN h ON l.tenant = h.tenant
          WHERE l.epoch = h.epoch AND l.holder = $1 AND l.expires_at > clock_timestamp()
            AND (${keyCondition.replaceAll('w.', 'h.')})
          FOR NO KEY UPDATE OF l SKIP LOCKED
       ), renewed AS (
         UPDATE changefeed_leases AS l
            SET expires_at = clock_timestamp() + $4 * interval '1 millisecond', renewed_at = clock_timestamp(),
                key_fingerprint = coalesce(h.key_fingerprint, l.key_fingerprint)
           FROM h, ours
          WHERE l.tenant = h.tenant AND ours.tenant = l.tenant AND l.epoch = h.epoch AND l.holder = $1
            AND l.expires_at > clock_timestamp()
          RETURNING l.tenant, l.epoch, l.expires_at
       )
       SELECT tenant, epoch, expires_at, false AS locked FROM renewed
       UNION ALL
       SELECT tenant, NULL, NULL, true FROM (
         SELECT l.tenant FROM changefeed_leases AS l JOIN h ON l.tenant = h.tenant
          WHERE l.epoch = h.epoch AND l.holder = $1 AND l.expires_at > clock_timestamp()
            AND (${keyCondition.replaceAll('w.', 'h.')})
         EXCEPT SELECT tenant FROM ours
       ) AS skipped`;
}

/**
 * What a renewal answered: the leases it extended, and the tenants it could not answer for
 * because another transaction held their rows locked (ask again next round; a lease left
 * unanswered until its local deadline is lost then).
 */
export interface RenewalAnswer {
  renewed: GrantedLease[];
  locked: string[];
}

/** A lease a renewal asks to extend, with the fingerprint of the key its tenant polls with now (if known). */
export interface RenewedLease {
  tenant: string;
  epoch: number;
  keyFingerprint?: string | undefined;
}

type GrantedRow = { tenant: string; epoch: string; expires_at: Date };
type RenewalRow = (GrantedRow & { locked: false }) | { tenant: string; locked: true };

/** `leases` in groups holding at most one lease of each key, in the order given. */
function onePerKey(leases: readonly RenewedLease[]): RenewedLease[][] {
  const groups: RenewedLease[][] = [];
  const seen = new Map<string | undefined, number>();
  for (const lease of leases) {
    const n = seen.get(lease.keyFingerprint) ?? 0;
    seen.set(lease.keyFingerprint, n + 1);
    (groups[n] ??= []).push(lease);
  }
  return groups;
}

const grantedLease = (row: GrantedRow): GrantedLease => ({
  tenant: row.tenant,
  epoch: Number(row.epoch),
  expiresAt: row.expires_at,
});

const renewalAnswer = (rows: readonly RenewalRow[]): RenewalAnswer => ({
  renewed: rows.flatMap((row) => (row.locked ? [] : [grantedLease(row)])),
  locked: rows.filter((row) => row.locked).map((row) => row.tenant),
});

/**
 * What an acquisition answered: the leases granted, in the order asked, and the wanted tenants
 * whose rows were free to take but locked by another transaction, so passed over (acquireMany).
 */
export interface AcquisitionAnswer {
  granted: GrantedLease[];
  passedOver: string[];
}

/** A tenant an acquisition asks for, with the fingerprint of the key it polls with (if known). */
export interface WantedLease {
  tenant: string;
  keyFingerprint?: string | undefined;
}

/** Instances not heard from for this many lease durations are deleted from changefeed_instances. */
const FORGET_INSTANCES_AFTER_LEASES = 20;

/**
 * The statements on the lease tables (leaseSchema.ts), one method each. Every comparison and
 * every written time uses the database's `clock_timestamp()`, so replicas whose clocks disagree
 * still agree on who holds what. Each method is one statement, atomic on its own.
 *
 * Lock modes (docs/leases.md): fenced writes hold FOR KEY SHARE (writeFence.ts); a release locks
 * the row FOR UPDATE first, which waits for them; an acquisition passes over a row they hold, and
 * a renewal (FOR NO KEY UPDATE) does not conflict with them. The round's statements pass over rows
 * another transaction holds, so one row locked for long cannot stop a replica's round.
 */
export class LeaseTable {
  private readonly leaseMs: number;
  private readonly queryTimeoutMs: number;

  constructor(
    private readonly pool: pg.Pool,
    options: LeaseTableOptions,
  ) {
    this.leaseMs = options.leaseMs;
    this.queryTimeoutMs = options.queryTimeoutMs ?? Math.max(1, Math.floor(options.leaseMs / 3));
  }

  /**
   * Records that `instanceId` is alive and where it is reached (`advertised`, none when
   * undefined); returns the database's time. The URLs are written every time, so a replica
   * restarted under the same instance id with another URL (or none) is never sent to at the old one.
   */
  async heartbeat(instanceId: string, advertised: AdvertisedUrls = {}): Promise<Date> {
    const result = await this.query<{ now: Date }>(
      `INSERT INTO changefeed_instances (instance_id, advertise_url, health_url) VALUES ($1, $2, $3)
       ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = clock_timestamp(),
         advertise_url = EXCLUDED.advertise_url, health_url = EXCLUDED.health_url
       RETURNING heartbeat_at AS now`,
      [instanceId, advertised.feedUrl ?? null, advertised.healthUrl ?? null],
    );
    return result.rows[0]!.now;
  }

  /** Replicas that heartbeat within the lease duration, sorted by id. */
  async liveInstances(): Promise<string[]> {
    const result = await this.query<{ instance_id: string }>(
      `SELECT instance_id FROM changefeed_instances
        WHERE heartbeat_at > clock_timestamp() - $1 * interval '1 millisecond'
        ORDER BY instance_id`,
      [this.leaseMs],
    );
    return result.rows.map((row) => row.instance_id);
  }

  /** A replica leaving for good: the others stop counting it at once instead of after a lease. */
  async retireInstance(instanceId: string): Promise<void> {
    await this.query('DELETE FROM changefeed_instances WHERE instance_id = $1', [instanceId]);
  }

  /** Deletes the rows of replicas silent for long, so the table does not grow with every restart. */
  async forgetDeadInstances(): Promise<number> {
    const result = await this.query(
      `DELETE FROM changefeed_instances WHERE heartbeat_at < clock_timestamp() - $1 * interval '1 millisecond'`,
      [this.leaseMs * FORGET_INSTANCES_AFTER_LEASES],
    );
    return result.rowCount ?? 0;
  }

  /**
   * Takes for `holder`, in one statement, each wanted tenant nobody holds validly: a new row, a
   * released or expired lease. Each epoch grows by one. Returns the leases granted, in the order
   * asked, and the tenants it passed over (`passedOver`: free rows another transaction held
   * locked); a tenant missing from both is held by another replica (or its key is, below).
   *
   * `locked` takes each free row FOR UPDATE SKIP LOCKED: a row the old holder's fenced write still
   * holds (FOR KEY SHARE, which an UPDATE alone, FOR NO KEY UPDATE, would not see), or another
   * transaction holds, is passed over and asked for again next round (docs/leases.md). Of
   * replicas racing, the first to lock takes it.
   * `fresh` inserts tenants never leased, in the order of their names (two inserts of the same
   * tenants wait on each other); of two inserting together one conflicts and gets nothing.
   *
   * With a `keyFingerprint` (the sha256 of the tenant's API key) a tenant is refused too while
   * another tenant's valid lease holds that key, so one key is polled by one tenant at a time in
   * the cluster whatever each replica's view of the tenants directory. The statement runs under
   * the advisory lock of every key it names, so two acquisitions of one key cannot both pass the
   * check; of two wanted tenants with one key only the first is asked for (one snapshot would
   * pass both).
   */
  async acquireMany(holder: string, wanted: readonly WantedLease[]): Promise<AcquisitionAnswer> {
    const seenKeys = new Set<string>();
    const asked = wanted.filter(({ keyFingerprint: key }) => {
      if (key === undefined) return true;
      if (seenKeys.has(key)) return false;
      seenKeys.add(key);
      return true;
    });
    if (asked.length === 0) return { granted: [], passedOver: [] };
    const statement = `WITH wanted AS (
         SELECT * FROM unnest($1::text[], $2::text[]) AS w(tenant, key_fingerprint)
       ), held_keys AS (
         SELECT k.tenant, k.key_fingerprint FROM changefeed_leases AS k
          WHERE k.key_fingerprint IS NOT NULL AND k.holder IS NOT NULL AND k.expires_at > clock_timestamp()
       ), locked AS (
         SELECT l.tenant, w.key_fingerprint FROM changefeed_leases AS l JOIN wanted AS w ON w.tenant = l.tenant
          WHERE (l.holder IS NULL OR l.expires_at <= clock_timestamp()) AND ${KEY_FREE}
          FOR UPDATE OF l SKIP LOCKED
       ), taken AS (
         UPDATE changefeed_leases AS l
            SET holder = $3, epoch = l.epoch + 1, expires_at = clock_timestamp() + $4 * interval '1 millisecond',
                acquired_at = clock_timestamp(), renewed_at = clock_timestamp(), released_at = NULL,
                key_fingerprint = locked.key_fingerprint
           FROM locked WHERE l.tenant = locked.tenant
         RETURNING l.tenant, l.epoch, l.expires_at
       ), fresh AS (
         INSERT INTO changefeed_leases (tenant, holder, epoch, expires_at, acquired_at, renewed_at, key_fingerprint)
         SELECT w.tenant, $3, 1, clock_timestamp() + $4 * interval '1 millisecond', clock_timestamp(),
                clock_timestamp(), w.key_fingerprint
           FROM wanted AS w
          WHERE NOT EXISTS (SELECT 1 FROM changefeed_leases AS x WHERE x.tenant = w.tenant) AND ${KEY_FREE}
          ORDER BY w.tenant
         ON CONFLICT (tenant) DO NOTHING
         RETURNING tenant, epoch, expires_at
       ), free AS (
         SELECT l.tenant FROM changefeed_leases AS l JOIN wanted AS w ON w.tenant = l.tenant
          WHERE (l.holder IS NULL OR l.expires_at <= clock_timestamp()) AND ${KEY_FREE}
       )
       SELECT tenant, epoch, expires_at, false AS passed FROM taken
       UNION ALL SELECT tenant, epoch, expires_at, false FROM fresh
       UNION ALL SELECT tenant, NULL, NULL, true FROM (SELECT tenant FROM free EXCEPT SELECT tenant FROM locked) AS passed`;
    const values = [asked.map((w) => w.tenant), asked.map((w) => w.keyFingerprint ?? null), holder, this.leaseMs];
    type Row = (GrantedRow & { passed: false }) | { tenant: string; passed: true };
    const result =
      seenKeys.size === 0
        ? await this.query<Row>(statement, values)
        : await this.underKeyLocks([...seenKeys], (client) => client.query<Row>(this.timed(statement, values)));
    const rank = new Map(asked.map((w, i) => [w.tenant, i]));
    const inAskedOrder = (a: { tenant: string }, b: { tenant: string }): number =>
      (rank.get(a.tenant) ?? 0) - (rank.get(b.tenant) ?? 0);
    return {
      granted: result.rows.flatMap((row) => (row.passed ? [] : [grantedLease(row)])).sort(inAskedOrder),
      passedOver: result.rows
        .filter((row) => row.passed)
        .sort(inAskedOrder)
        .map((row) => row.tenant),
    };
  }

  /**
   * Runs `work` in a transaction holding the advisory lock of each of `keyFingerprints`, taken in
   * sorted order (no wait in a circle): acquisitions of one key are serialised, and each one's
   * statement sees the lease the one before took (READ COMMITTED: a snapshot per statement).
   */
  private async underKeyLocks<R>(
    keyFingerprints: readonly string[],
    work: (client: pg.PoolClient) => Promise<R>,
  ): Promise<R> {
    const client = await this.pool.connect();
    // A checked-out client has no listener of the pool's: a connection cut meanwhile would emit an
    // uncaught 'error'. The statement under way fails instead.
    const ignore = (): void => undefined;
    client.on('error', ignore);
    let broken = false;
    try {
      await client.query('BEGIN');
      await client.query(
        this.timed(
          `SELECT pg_advisory_xact_lock(hashtext('changefeed_leases.key:' || k))
             FROM unnest($1::text[]) WITH ORDINALITY AS keys(k, i) ORDER BY i`,
          [[...keyFingerprints].sort()],
        ),
      );
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      broken = true;
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.off('error', ignore);
      // A client whose statement timed out may still be running it: discarded, not reused.
      client.release(broken);
    }
  }

  private timed(text: string, values: unknown[]): pg.QueryConfig {
    // query_timeout is honoured per query by pg's client, though its types only list it on the client config.
    return { text, values, query_timeout: this.queryTimeoutMs } as pg.QueryConfig;
  }

  /**
   * Extends the leases `holder` still validly holds at the given epochs; returns those renewed,
   * and those whose rows another transaction held locked (`locked`, skipped: see renewal()). A
   * lease missing from both expired, was taken over, or names a key another tenant's valid lease
   * holds: its tenant must stop at once. A given `keyFingerprint` replaces the recorded one,
   * so a tenant whose file took another key does not keep refusing its old key to the tenant that
   * has it now; a new one is checked as an acquisition checks it (docs/leases.md).
   *
   * A round whose keys are as recorded is one statement that writes no key column, so a long
   * fenced write (FOR KEY SHARE, which FOR NO KEY UPDATE does not conflict with) cannot hold it
   * up. Leases it left out that name a key (a key that changed, or a lease lost) are asked again
   * in a transaction holding those keys' advisory locks, with the acquisition's key condition in
   * its statement: a renewal and an acquisition of one new key are serialised, and the second sees
   * the first.
   */
  async renew(holder: string, leases: readonly RenewedLease[]): Promise<RenewalAnswer> {
    if (leases.length === 0) return { renewed: [], locked: [] };
    const unchanged = await this.query<RenewalRow>(
      renewal('h.key_fingerprint IS NULL OR h.key_fingerprint = l.key_fingerprint'),
      this.renewalValues(holder, leases),
    );
    const answered = new Set(unchanged.rows.map((row) => row.tenant));
    const rekeyed = leases.filter((l) => l.keyFingerprint !== undefined && !answered.has(l.tenant));
    if (rekeyed.length === 0) return renewalAnswer(unchanged.rows);
    const keys = [...new Set(rekeyed.map((l) => l.keyFingerprint!))];
    const checked = await this.underKeyLocks(keys, async (client) => {
      const rows: RenewalRow[] = [];
      // One lease of a key per statement: one snapshot would pass two tenants taking one key in a
      // round, and each statement sees the leases the ones before it renewed.
      for (const asked of onePerKey(rekeyed)) {
        const result = await client.query<RenewalRow>(this.timed(renewal(KEY_FREE), this.renewalValues(holder, asked)));
        rows.push(...result.rows);
      }
      return rows;
    });
    return renewalAnswer([...unchanged.rows, ...checked]);
  }

  private renewalValues(holder: string, leases: readonly RenewedLease[]): unknown[] {
    return [
      holder,
      leases.map((l) => l.tenant),
      leases.map((l) => String(l.epoch)),
      this.leaseMs,
      leases.map((l) => l.keyFingerprint ?? null),
    ];
  }

  /**
   * Gives `tenant` up if `holder` holds it at `epoch`; false if it was not (or no longer) theirs,
   * or its row was passed over (releaseMany).
   */
  async release(tenant: string, holder: string, epoch: number): Promise<boolean> {
    return (await this.releaseMany(holder, [{ tenant, epoch }])).length === 1;
  }

  /**
   * Gives up, in one statement, the leases `holder` holds at the given epochs; returns the tenants
   * released. It does not wait for a write of the epoch still open (FOR NO KEY UPDATE, which its
   * FOR KEY SHARE does not conflict with): the write's lock carries over to the released row, and
   * an acquisition passes over the row until the write ends. A row another transaction holds
   * locked (a session's FOR UPDATE) is passed over (SKIP LOCKED) and stays held until the round's
   * releaseAllExcept gives it up, or it expires.
   */
  async releaseMany(holder: string, leases: readonly { tenant: string; epoch: number }[]): Promise<string[]> {
    if (leases.length === 0) return [];
    const result = await this.query<{ tenant: string }>(
      `WITH locked AS (
         SELECT l.tenant FROM changefeed_leases AS l
           JOIN unnest($2::text[], $3::bigint[]) AS w(tenant, epoch) ON l.tenant = w.tenant AND l.epoch = w.epoch
          WHERE l.holder = $1
            FOR NO KEY UPDATE OF l SKIP LOCKED
       )
       UPDATE changefeed_leases AS l
          SET holder = NULL, expires_at = clock_timestamp(), released_at = clock_timestamp()
         FROM locked WHERE l.tenant = locked.tenant
       RETURNING l.tenant`,
      [holder, leases.map((l) => l.tenant), leases.map((l) => String(l.epoch))],
    );
    return result.rows.map((row) => row.tenant);
  }

  /**
   * Releases every lease the database credits to `holder` except `keep`: those this replica does
   * not know it holds (given up locally while the database was away, an acquisition whose answer
   * timed out, an earlier process of the same id), which would otherwise sit unused until they
   * expire. No FOR UPDATE: the renewal round must not wait for fenced writes; the next
   * acquisition of those tenants passes over their rows until the writes end. A row another
   * transaction holds locked is passed over (SKIP LOCKED; answered in `passedOver` while its lease
   * is valid, sorted by tenant) and released by a later round.
   */
  async releaseAllExcept(
    holder: string,
    keep: readonly string[],
  ): Promise<{ released: string[]; passedOver: string[] }> {
    const result = await this.query<{ tenant: string; passed: boolean }>(
      `WITH unkept AS (
         SELECT tenant FROM changefeed_leases WHERE holder = $1 AND NOT (tenant = ANY($2::text[]))
          FOR NO KEY UPDATE SKIP LOCKED
       ), released AS (
         UPDATE changefeed_leases AS l
            SET holder = NULL, expires_at = clock_timestamp(), released_at = clock_timestamp()
           FROM unkept WHERE l.tenant = unkept.tenant
          RETURNING l.tenant
       )
       SELECT tenant, false AS passed FROM released
       UNION ALL
       SELECT tenant, true FROM (
         SELECT tenant FROM changefeed_leases
          WHERE holder = $1 AND NOT (tenant = ANY($2::text[])) AND expires_at > clock_timestamp()
         EXCEPT SELECT tenant FROM unkept
       ) AS passed`,
      [holder, keep],
    );
    const tenants = (passed: boolean): string[] =>
      result.rows
        .filter((row) => row.passed === passed)
        .map((row) => row.tenant)
        .sort();
    return { released: tenants(false), passedOver: tenants(true) };
  }

  /** Every lease row, for the assignment and for `status`; sorted by tenant. */
  async list(): Promise<LeaseRow[]> {
    const result = await this.query<{
      tenant: string;
      holder: string | null;
      epoch: string;
      expires_in_ms: number;
      holder_live: boolean;
      holder_live_for_ms: number | null;
      advertise_url: string | null;
      health_url: string | null;
    }>(
      `SELECT l.tenant, l.holder, l.epoch,
              ((extract(epoch FROM l.expires_at) - extract(epoch FROM clock_timestamp())) * 1000)::float8
                AS expires_in_ms,
              (i.heartbeat_at IS NOT NULL AND i.heartbeat_at > clock_timestamp() - $1 * interval '1 millisecond')
                AS holder_live,
              ((extract(epoch FROM i.heartbeat_at + $1 * interval '1 millisecond') - extract(epoch FROM clock_timestamp()))
                * 1000)::float8 AS holder_live_for_ms,
              i.advertise_url, i.health_url
         FROM changefeed_leases l LEFT JOIN changefeed_instances i ON i.instance_id = l.holder
        ORDER BY l.tenant`,
      [this.leaseMs],
    );
    return result.rows.map((row) => ({
      tenant: row.tenant,
      holder: row.holder ?? undefined,
      epoch: Number(row.epoch),
      // Each time is taken apart before the difference (extract, then subtract): PostgreSQL 15
      // refuses to subtract an infinite timestamp, and a row set by hand to '-infinity' (expired
      // for good) or 'infinity' (held until released) would fail every list, the lease round's
      // with it. They come back as -Infinity and Infinity.
      expiresInMs: Number.isNaN(row.expires_in_ms) ? -Infinity : row.expires_in_ms,
      holderLive: row.holder_live,
      holderLiveForMs: row.holder_live_for_ms ?? -Infinity,
      holderUrl: parseAdvertiseUrl(row.advertise_url),
      holderHealthUrl: parseAdvertiseUrl(row.health_url),
    }));
  }

  /**
   * Deletes the rows of tenants no longer configured, unless validly held (their holder is still
   * draining them). Their epochs start again at 1 if they come back, which is safe: a fenced
   * write matches holder and epoch, and a replica that lost a lease never writes under it again.
   * A row another transaction holds locked (an old holder's write still open, an operator's
   * session) is passed over (SKIP LOCKED) and forgotten by a later round: never deleted under an
   * open write.
   */
  async forgetTenants(existing: readonly string[]): Promise<string[]> {
    const result = await this.query<{ tenant: string }>(
      `WITH unconfigured AS (
         SELECT tenant FROM changefeed_leases
          WHERE NOT (tenant = ANY($1::text[])) AND (holder IS NULL OR expires_at <= clock_timestamp())
          FOR UPDATE SKIP LOCKED
       )
       DELETE FROM changefeed_leases AS l USING unconfigured WHERE l.tenant = unconfigured.tenant
       RETURNING l.tenant`,
      [existing],
    );
    return result.rows.map((row) => row.tenant);
  }

  private query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(this.timed(text, values));
  }
}
