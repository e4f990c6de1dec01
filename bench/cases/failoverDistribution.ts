import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { clusterConfigSchema } from '../../src/cluster/clusterConfig.js';
import { startSimulator } from '../../src/simulator/index.js';
import type { BenchRow } from '../benchTable.js';
import {
  companyOf,
  isReady,
  leaseRows,
  running,
  startReplica,
  validHolders,
  writeReplicaConfig,
  type BenchReplica,
} from './benchReplicas.js';
import { distribution, isPoll, overlaps, requestsAfterKill, takeovers, type Takeover } from './failoverRecords.js';

const POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
/** The point of the bench: the lease every deployment gets unless it sets one. */
const LEASE_MS = clusterConfigSchema.parse({}).leaseSeconds * 1000;
const MAX_SETTLE_MS = Number(process.env.BENCH_MAX_SETTLE_SECONDS ?? 900) * 1000;
const MAX_TAKEOVER_MS = 180_000;
export interface FailoverOptions {
  readonly tenants: number;
  readonly replicas: number;
  readonly careers: number;
  readonly skills: number;
  /** Changes per hour per company in the simulator. */
  readonly eventsPerHour: number;
}

export interface FailoverResult {
  /** Per tenant of the killed replica: each interval of its takeover, count / min / median / p95 / max. */
  readonly distribution: BenchRow[];
  /** The run: holders before the kill, re-lease and readiness times, losses and overlaps, load. */
  readonly run: BenchRow;
}

/**
 * Failover time distribution (issue 14): N replicas of the compiled daemon share T tenants on
 * PostgreSQL (a fresh schema, dropped after) with the default `cluster.leaseSeconds` and each
 * tenant at its default budget; once every lease has stayed put for a lease and every log of
 * every tenant has been polled (the steady state), the replica holding the most is killed with
 * SIGKILL. The simulator runs in this process, for its per-request record of which replica read
 * which company when (`requests`); its CPU is reported beside the figures.
 *
 * Failover of a tenant is measured from the kill instant: the bound under test (lease expiry at
 * most `leaseSeconds` after the last renewal, which came before the kill) is anchored on the
 * replica's death, while its last request depends on where the budget's pacing (one read every
 * 4 s at 900 reads an hour) happened to leave it. The gap from the last request is reported too.
 */
export async function failoverDistribution(options: FailoverOptions): Promise<FailoverResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cf-failover-'));
  const schema = `cf_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  const simulator = await startSimulator({
    companies: options.tenants,
    careers: options.careers,
    skills: options.skills,
    eventsPerHour: options.eventsPerHour,
  });
  const replicas: BenchReplica[] = [];
  const started = Date.now();
  const cpuBefore = process.cpuUsage();
  let failed = true;
  try {
    const keys = simulator.companies.map((c) => c.apiKey);
    const config = writeReplicaConfig(dir, simulator.url, keys, POSTGRES_URL, schema);
    for (let i = 0; i < options.replicas; i++)
      replicas.push(await startReplica(dir, config, `replica-${String.fromCharCode(97 + i)}`));
    const alive = (): void => {
      const dead = replicas.find((r) => !running(r.child));
      if (dead) throw new Error(`${dead.id} exited early; its log: ${dead.logFile}`);
    };

    // Steady state: every lease valid and unmoved for a lease, every log of every tenant polled.
    const logsPerCompany = options.careers + options.skills + 1;
    const polled = simulator.companies.map(() => new Set<string>());
    let scanned = 0;
    const allPolled = (): boolean => {
      const record = simulator.requests;
      for (; scanned < record.length; scanned++) {
        const r = record[scanned]!;
        if (r.company !== null && isPoll(r.path)) polled[r.company]?.add(r.path);
      }
      return polled.every((paths) => paths.size >= logsPerCompany);
    };
    let holders = new Map<string, string>();
    let last = '';
    let changedAt = Date.now();
    for (;;) {
      alive();
      holders = validHolders(await leaseRows(admin, schema));
      const now = JSON.stringify([...holders].sort());
      if (now !== last) [last, changedAt] = [now, Date.now()];
      const spread = new Set(holders.values()).size === options.replicas;
      if (holders.size === options.tenants && spread && Date.now() - changedAt >= LEASE_MS && allPolled()) break;
      if (Date.now() - started > MAX_SETTLE_MS) throw new Error(`not settled after ${MAX_SETTLE_MS} ms`);
      await sleep(1000);
    }
    const settledS = (Date.now() - started) / 1000;
    const counts = new Map(replicas.map((r) => [r.id, 0]));
    for (const h of holders.values()) counts.set(h, (counts.get(h) ?? 0) + 1);
    const [killedId] = [...counts].sort((a, b) => b[1] - a[1])[0]!;
    const killed = replicas.find((r) => r.id === killedId)!;
    const survivors = replicas.filter((r) => r !== killed);
    const orphans = [...holders].filter(([, h]) => h === killedId).map(([t]) => t);

    const loadAtKill = loadavg();
    const killedAt = Date.now();
    killed.child.kill('SIGKILL');
    await sleep(300);
    // The killed replica's last lease of each tenant, before anyone could take it (>= 10 s away).
    const oldExpiry = new Map(
      (await leaseRows(admin, schema)).filter((r) => r.holder === killedId).map((r) => [r.tenant, r.expiresAt]),
    );

    // Until every orphan is leased elsewhere and polled there, and the survivors are ready.
    let reLeased = new Map<string, { holder: string; acquiredAt: number }>();
    let readyAt: number | undefined;
    // Survivors go unready while a tenant they just started waits for its first answer.
    const unready: number[] = [];
    let taken = new Map<number, Takeover>();
    while (Date.now() - killedAt < MAX_TAKEOVER_MS) {
      const rows = await leaseRows(admin, schema);
      reLeased = new Map(
        rows
          .filter((r) => orphans.includes(r.tenant) && r.valid && r.holder !== null && r.holder !== killedId)
          .map((r) => [r.tenant, { holder: r.holder!, acquiredAt: r.acquiredAt ?? Number.NaN }]),
      );
      taken = takeovers(simulator.requests, orphans.map(companyOf), killedId, killedAt);
      const allStarted = [...taken.values()].every((t) => t.firstRequestAt !== undefined);
      const ready = (await Promise.all(survivors.map(isReady))).every(Boolean);
      if (!ready) unready.push(Date.now() - killedAt);
      if (readyAt === undefined && ready && reLeased.size === orphans.length && allStarted) readyAt = Date.now();
      if (readyAt !== undefined && [...taken.values()].every((t) => t.firstPollAt !== undefined)) break;
      await sleep(200);
    }
    // A lease more, so a tenant moved again (or polled by two) after its takeover shows.
    await sleep(LEASE_MS);
    const finalHolders = validHolders(await leaseRows(admin, schema));
    const record = simulator.requests;
    taken = takeovers(record, orphans.map(companyOf), killedId, killedAt);

    const problems: string[] = [];
    // Lost: not held by a survivor a lease after the takeover, or never read by one.
    const lost = orphans.filter(
      (t) =>
        !survivors.some((s) => s.id === finalHolders.get(t)) || taken.get(companyOf(t))?.firstRequestAt === undefined,
    );
    for (const tenant of orphans) {
      const expiry = oldExpiry.get(tenant);
      const next = reLeased.get(tenant);
      const first = taken.get(companyOf(tenant))?.firstRequestAt;
      if (expiry !== undefined && next !== undefined && next.acquiredAt < expiry)
        problems.push(`${tenant}: acquired ${expiry - next.acquiredAt} ms before the old lease expired`);
      if (expiry !== undefined && first !== undefined && first < expiry)
        problems.push(`${tenant}: polled by ${next?.holder} ${expiry - first} ms before the old lease expired`);
    }
    problems.push(...overlaps(record, LEASE_MS));
    const late = requestsAfterKill(record, killedId, killedAt);
    if (late > 0) problems.push(`${late} requests by ${killedId} after the kill`);
    for (const p of problems.slice(0, 20)) console.error(`failover bench: ${p}`);
    // What the slowest tenant's new holder did first: where its first poll went.
    const slowest = [...taken.values()].sort((a, b) => (b.firstPollAt ?? Infinity) - (a.firstPollAt ?? Infinity))[0];
    const firsts = record.filter((r) => r.company === slowest?.company && r.at >= killedAt).slice(0, 4);
    console.error(
      `failover bench: slowest first poll, company ${slowest?.company}: ` +
        firsts.map((r) => `${((r.at - killedAt) / 1000).toFixed(1)} s ${r.instanceId} ${r.path}`).join(', '),
    );

    const rows = intervalRows(orphans, killedAt, taken, oldExpiry, reLeased);
    const wallS = (Date.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const lastMinute = record.filter((r) => r.at > killedAt - 60_000 && r.at <= killedAt);
    failed = false;
    return {
      distribution: rows,
      run: {
        case: `${options.replicas} replicas, ${options.tenants} tenants, lease ${LEASE_MS / 1000} s`,
        'tenants per replica': [...counts].map(([id, n]) => `${id.slice(-1)}:${n}`).join(' '),
        killed: `${killedId} (${orphans.length})`,
        'settled after s': Math.round(settledS),
        'requests/s before kill': lastMinute.length / 60,
        '429s': record.filter((r) => r.status === 429).length,
        'all re-leased after s': (Math.max(...[...reLeased.values()].map((r) => r.acquiredAt)) - killedAt) / 1000,
        'survivors ready after s': readyAt === undefined ? 'never' : (readyAt - killedAt) / 1000,
        'survivors unready seen s after kill':
          unready.length === 0 ? 'never' : `${(unready[0]! / 1000).toFixed(1)}-${(unready.at(-1)! / 1000).toFixed(1)}`,
        lost: lost.length,
        'overlaps and early polls': problems.length,
        'load avg at kill (1/5/15 min)': loadAtKill.map((l) => l.toFixed(2)).join(' '),
        'load avg at end': loadavg()
          .map((l) => l.toFixed(2))
          .join(' '),
        'bench process (simulator) CPU % of a core': ((cpu.user + cpu.system) / 1e4 / wallS).toFixed(1),
      },
    };
  } finally {
    for (const r of replicas) if (running(r.child)) r.child.kill('SIGKILL');
    await simulator.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.end();
    // The replicas' logs explain a failed run; BENCH_KEEP_LOGS=1 keeps them after a good one too.
    if (failed || process.env.BENCH_KEEP_LOGS === '1') console.error(`failover bench: logs kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/** One row per interval of a takeover, in seconds over the killed replica's tenants. */
function intervalRows(
  orphans: readonly string[],
  killedAt: number,
  taken: ReadonlyMap<number, Takeover>,
  oldExpiry: ReadonlyMap<string, number>,
  reLeased: ReadonlyMap<string, { acquiredAt: number }>,
): BenchRow[] {
  const per = (f: (tenant: string, t: Takeover) => number | undefined): number[] =>
    orphans.flatMap((tenant) => {
      const t = taken.get(companyOf(tenant));
      const v = t === undefined ? undefined : f(tenant, t);
      return v === undefined || Number.isNaN(v) ? [] : [v];
    });
  const minus = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined || b === undefined ? undefined : a - b;
  const acquired = (tenant: string): number | undefined => reLeased.get(tenant)?.acquiredAt;
  const row = (name: string, ms: number[]): BenchRow => {
    const d = distribution(ms);
    return { case: name, tenants: d.count, 'min s': d.min, 'median s': d.median, 'p95 s': d.p95, 'max s': d.max };
  };
  return [
    row(
      'failover: kill -> first request by a survivor',
      per((_, t) => minus(t.firstRequestAt, killedAt)),
    ),
    row(
      'kill -> first poll by a survivor',
      per((_, t) => minus(t.firstPollAt, killedAt)),
    ),
    row(
      'last request by the killed -> first by a survivor',
      per((_, t) => minus(t.firstRequestAt, t.lastByKilledAt)),
    ),
    row(
      '  kill -> its lease expires',
      per((tenant) => minus(oldExpiry.get(tenant), killedAt)),
    ),
    row(
      '  expiry -> acquired by a survivor',
      per((tenant) => minus(acquired(tenant), oldExpiry.get(tenant))),
    ),
    row(
      '  acquired -> first request (start, ping)',
      per((tenant, t) => minus(t.firstRequestAt, acquired(tenant))),
    ),
    row(
      '  acquired -> first poll',
      per((tenant, t) => minus(t.firstPollAt, acquired(tenant))),
    ),
  ];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// `npm run build && npx tsx bench/cases/failoverDistribution.ts [tenants] [replicas]`
if (process.argv[1] === import.meta.filename) {
  const [tenants = '300', replicas = '3'] = process.argv.slice(2);
  const { printTable } = await import('../benchTable.js');
  const { FAILOVER_FIRST_POLL, FAILOVER_FIRST_POLL_GOAL, judgeRows } = await import('../benchSections.js');
  const result = await failoverDistribution({
    tenants: Number(tenants),
    replicas: Number(replicas),
    careers: 20,
    skills: 5,
    eventsPerHour: 60,
  });
  printTable(
    'Failover after kill -9 of the replica holding the most tenants (seconds)',
    judgeRows(result.distribution, new Map([[FAILOVER_FIRST_POLL, FAILOVER_FIRST_POLL_GOAL]])),
  );
  printTable('Failover run', [result.run]);
}
