import { request } from 'undici';
import type { HttpConfig, ReadinessCheck } from '../observe/healthServer.js';
import type { SinkStatus, StatusReport } from './statusReport.js';
import type { TenantHolder } from './tenantHolder.js';

/** What the running daemon's /readyz says right now, or why it could not be asked. */
export type LiveReadiness = (
  { reachable: true; url: string; checks: ReadinessCheck[] } | { reachable: false; url: string | null; reason: string }
) & {
  /** The replica holding the tenant's lease, when the store has leases. */
  holder?: string;
};

const READYZ_TIMEOUT_MS = 2_000;
/** /readyz lists a few checks per sink; more than this is not our daemon. */
const MAX_READYZ_BYTES = 1024 * 1024;

/**
 * Asks the daemon that runs the tenant for its readiness checks: on a store with leases the
 * replica holding it, at the health URL it advertises (cluster.advertiseHealthUrl); else, or when the holder
 * advertises none, the daemon serving `http` on this host, whose answer counts only if it runs
 * the tenant (its checks name it), so a replica that does not hold it never passes for the holder.
 */
export async function fetchHolderReadiness(
  http: HttpConfig,
  holder: TenantHolder,
  checkPrefix: string,
  tenant: string,
): Promise<LiveReadiness> {
  if (holder.kind === 'local') return fetchLiveReadiness(http);
  if (holder.kind === 'unheld')
    return { reachable: false, url: null, reason: `no replica holds tenant ${tenant} now (its lease is free)` };
  const named = { holder: holder.holder };
  if (!holder.live)
    return {
      reachable: false,
      url: holder.healthUrl ?? null,
      reason: `tenant ${tenant} is held by ${holder.holder}, which stopped heartbeating`,
      ...named,
    };
  if (holder.healthUrl !== undefined) return { ...(await fetchReadiness(`${holder.healthUrl}/readyz`)), ...named };
  const local = await fetchLiveReadiness(http);
  if (local.reachable && local.checks.some((c) => c.name.startsWith(`${checkPrefix}sink:`)))
    return { ...local, ...named };
  return {
    reachable: false,
    url: null,
    reason:
      `tenant ${tenant} is held by ${holder.holder}, which sets no cluster.advertiseHealthUrl, so it cannot be asked ` +
      "(run status with that replica's config, or set cluster.advertiseHealthUrl)",
    ...named,
  };
}

/** Asks the daemon serving `http` (when a port is configured) for its readiness checks. */
async function fetchLiveReadiness(http: HttpConfig): Promise<LiveReadiness> {
  if (http.port === null || http.port === 0)
    return { reachable: false, url: null, reason: 'http.port is not set, so the running daemon cannot be asked' };
  const host = http.host === '0.0.0.0' ? '127.0.0.1' : http.host === '::' ? '::1' : http.host;
  return fetchReadiness(`http://${host.includes(':') ? `[${host}]` : host}:${http.port}/readyz`);
}

async function fetchReadiness(url: string): Promise<LiveReadiness> {
  try {
    const res = await request(url, {
      headersTimeout: READYZ_TIMEOUT_MS,
      bodyTimeout: READYZ_TIMEOUT_MS,
      signal: AbortSignal.timeout(READYZ_TIMEOUT_MS),
    });
    // The URL may come from the store (a holder's advertiseHealthUrl): read no more than /readyz can be.
    let bytes = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > MAX_READYZ_BYTES) {
        res.body.destroy();
        return { reachable: false, url, reason: 'the answer is too large to be the daemon' };
      }
      chunks.push(chunk);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const body = JSON.parse(text) as { checks?: unknown };
    if (!Array.isArray(body.checks))
      return { reachable: false, url, reason: `the answer (HTTP ${res.statusCode}) is not the daemon's readiness` };
    return { reachable: true, url, checks: body.checks as ReadinessCheck[] };
  } catch (error) {
    return {
      reachable: false,
      url,
      reason: `no daemon answered (${(error as { code?: string }).code ?? (error as Error).message})`,
    };
  }
}

/**
 * Replaces what the store last recorded by what is true now: with the daemon reachable, a sink is
 * active when the daemon runs it and connected when its readiness says so; without it, active
 * follows the current config and connected is the last recorded value, marked as such.
 */
export function withLiveSinkState(
  report: StatusReport,
  live: LiveReadiness,
  configuredSinks: readonly string[],
  /** The tenant's prefix of readiness check names (`<tenant>/`; none for `default`). */
  checkPrefix = '',
): StatusReport {
  const checks = live.reachable ? new Map(live.checks.map((c) => [c.name, c])) : undefined;
  const sinks = report.sinks.map((s): SinkStatus => {
    if (!checks)
      return { ...s, active: configuredSinks.includes(s.name) && s.disabledReason === null, stateSource: 'recorded' };
    const check = checks.get(`${checkPrefix}sink:${s.name}`);
    const running = check !== undefined && !(check.detail ?? '').startsWith('disabled');
    // Any detail (not connected, endpoint failing, disabled) is a sink not delivering, within grace or not.
    const disconnected = check === undefined || !check.ok || check.detail !== undefined;
    return { ...s, active: running, connected: running && !disconnected, stateSource: 'live' };
  });
  return {
    ...report,
    sinks,
    daemon: {
      ...(live.reachable
        ? { reachable: true as const, url: live.url }
        : { reachable: false as const, url: live.url, reason: live.reason }),
      ...(live.holder === undefined ? {} : { holder: live.holder }),
    },
  };
}
