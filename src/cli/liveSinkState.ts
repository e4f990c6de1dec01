import { request } from 'undici';
import type { HttpConfig } from '../observe/healthServer.js';
import type { SinkStatus, StatusReport } from './statusReport.js';

/** What the running daemon's /readyz says right now, or why it could not be asked. */
export type LiveReadiness =
  | { reachable: true; url: string; checks: { name: string; ok: boolean; detail?: string }[] }
  | { reachable: false; url: string | null; reason: string };

const READYZ_TIMEOUT_MS = 2_000;
/** /readyz lists a few checks per sink; more than this is not our daemon. */
const MAX_READYZ_BYTES = 1024 * 1024;

/** Asks the daemon serving `http` (when a port is configured) for its readiness checks. */
export async function fetchLiveReadiness(http: HttpConfig): Promise<LiveReadiness> {
  if (http.port === null || http.port === 0)
    return { reachable: false, url: null, reason: 'http.port is not set, so the running daemon cannot be asked' };
  const host = http.host === '0.0.0.0' ? '127.0.0.1' : http.host === '::' ? '::1' : http.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${http.port}/readyz`;
  try {
    const res = await request(url, {
      headersTimeout: READYZ_TIMEOUT_MS,
      bodyTimeout: READYZ_TIMEOUT_MS,
      signal: AbortSignal.timeout(READYZ_TIMEOUT_MS),
    });
    const text = await res.body.text();
    if (text.length > MAX_READYZ_BYTES)
      return { reachable: false, url, reason: 'the answer is too large to be the daemon' };
    const body = JSON.parse(text) as { checks?: unknown };
    if (!Array.isArray(body.checks))
      return { reachable: false, url, reason: `the answer (HTTP ${res.statusCode}) is not the daemon's readiness` };
    return { reachable: true, url, checks: body.checks as { name: string; ok: boolean; detail?: string }[] };
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
    const disconnected = check === undefined || !check.ok || (check.detail ?? '').startsWith('not connected');
    return { ...s, active: running, connected: running && !disconnected, stateSource: 'live' };
  });
  return {
    ...report,
    sinks,
    daemon: live.reachable
      ? { reachable: true, url: live.url }
      : { reachable: false, url: live.url, reason: live.reason },
  };
}
