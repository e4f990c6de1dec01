import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { writeCompanyTenants } from './companyTenants.js';
import { freePort } from './processProbe.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** A replica of the compiled daemon (`node dist/cli/changefeed.js run`), its own process. */
export interface BenchReplica {
  readonly id: string;
  readonly child: ChildProcess;
  /** Its /healthz, /readyz and /metrics. */
  readonly port: number;
  /** Its stderr (JSON log lines), kept for whoever investigates a run. */
  readonly logFile: string;
}

/** A tenant's lease row as the database holds it; times are epoch ms of the database's clock. */
export interface LeaseRow {
  readonly tenant: string;
  readonly holder: string | null;
  readonly epoch: number;
  readonly expiresAt: number;
  readonly acquiredAt: number | null;
  /** `expires_at > clock_timestamp()`: judged by the database, as the replicas' leases are. */
  readonly valid: boolean;
}

export { companyOf, tenantName } from './companyTenants.js';

/**
 * The main config and one tenant file per company key, each tenant with a file sink of its own;
 * every replica runs the same config, told apart by its instance id, state directory and port
 * (environment). Budgets and `cluster` are left at their defaults: the point of the bench.
 */
export function writeReplicaConfig(
  dir: string,
  url: string,
  keys: readonly string[],
  storeUrl: string,
  schema: string,
): string {
  const tenantsDir = writeCompanyTenants(dir, keys);
  const config = join(dir, 'changefeed.yaml');
  writeFileSync(
    config,
    [
      `api: { baseUrl: "${url}" }`,
      'watch: { careers: { discover: true }, skills: { discover: true }, identityProviderEvents: true }',
      `store: { url: "${storeUrl}", schema: ${schema} }`,
      `tenants: { dir: "${tenantsDir}" }`,
      // info: the lease acquisitions and tenant starts, with their times, for investigation.
      'log: { level: info }',
    ].join('\n'),
  );
  return config;
}

export async function startReplica(dir: string, config: string, id: string): Promise<BenchReplica> {
  const port = await freePort();
  const logFile = join(dir, `${id}.log`);
  const fd = openSync(logFile, 'w');
  const { CHANGEFEED_STORE_URL: _ignored, ...env } = process.env;
  const child = spawn(process.execPath, [join(ROOT, 'dist/cli/changefeed.js'), 'run', '--config', config], {
    cwd: ROOT,
    env: {
      ...env,
      CHANGEFEED_CONFIG: '',
      CHANGEFEED_API_KEY: '',
      CHANGEFEED_INSTANCE_ID: id,
      CHANGEFEED_STATE_DIR: join(dir, `state-${id}`),
      CHANGEFEED_HTTP_PORT: String(port),
    },
    stdio: ['ignore', 'ignore', fd],
  });
  closeSync(fd);
  return { id, child, port, logFile };
}

/** Every lease row of the schema (empty before the first replica created the table). */
export async function leaseRows(admin: pg.Client, schema: string): Promise<LeaseRow[]> {
  try {
    const { rows } = await admin.query<{
      tenant: string;
      holder: string | null;
      epoch: string;
      expires_at: Date;
      acquired_at: Date | null;
      valid: boolean;
    }>(
      `SELECT tenant, holder, epoch, expires_at, acquired_at, expires_at > clock_timestamp() AS valid
       FROM "${schema}".changefeed_leases`,
    );
    return rows.map((r) => ({
      tenant: r.tenant,
      holder: r.holder,
      epoch: Number(r.epoch),
      expiresAt: r.expires_at.getTime(),
      acquiredAt: r.acquired_at?.getTime() ?? null,
      valid: r.valid,
    }));
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return [];
    throw error;
  }
}

/** Tenant -> holder of a valid lease. */
export function validHolders(rows: readonly LeaseRow[]): Map<string, string> {
  return new Map(rows.filter((r) => r.holder !== null && r.valid).map((r) => [r.tenant, r.holder as string]));
}

/** True when the replica's /readyz answers 200. */
export async function isReady(replica: BenchReplica): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${replica.port}/readyz`, { signal: AbortSignal.timeout(2_000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** Neither exited nor killed by a signal (a signal leaves exitCode null). */
export function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}
