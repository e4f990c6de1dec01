import { readBudget, readLogRows, readSinkRows, type LogRow } from '../console/consoleReads.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import { terminalSafe } from './terminalText.js';

/**
 * What `changefeed status --json` prints, each field described in docs/operations.md. `daemon`
 * says whether the daemon running the tenant answered (liveSinkState.ts); sink state is live only
 * when it did.
 */
export type StatusReport = Omit<Awaited<ReturnType<typeof buildStatusReport>>, 'daemon'> & {
  daemon: ({ reachable: true; url: string } | { reachable: false; url: string | null; reason: string }) & {
    holder?: string;
  };
};
export type SinkStatus = StatusReport['sinks'][number];

/** The read budget as the daemon last recorded it, in dates. */
async function budgetOf(store: ChangefeedStore) {
  const b = await readBudget(store);
  if (!b) return null;
  return {
    at: new Date(b.at).toISOString(),
    allowancePerHour: b.allowancePerHour,
    serverRemaining: b.serverRemaining,
    resetAt: iso(b.resetAt),
    pollBudgetPerHour: b.pollBudgetPerHour === null ? null : Math.round(b.pollBudgetPerHour),
    blockedUntil: iso(b.blockedUntil),
  };
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** What is not covered after coveredUntil and why; null while the log is polled normally. */
function gapOf(w: LogRow): { from: string; reason: string } | null {
  const from = iso(w.windowEnd ?? w.coverageStart) ?? 'the start';
  if (w.status !== 'active') return { from, reason: `${w.status}: ${w.statusReason ?? 'no reason recorded'}` };
  if (w.consecutiveFailures > 0)
    return { from, reason: `${w.consecutiveFailures} failed polls in a row: ${w.lastError ?? ''}` };
  return null;
}

/** A sink's `stateSource`: `live` from the running daemon's /readyz (liveSinkState.ts), else as the daemon recorded it. */
const RECORDED: 'live' | 'recorded' = 'recorded';

export async function buildStatusReport(store: ChangefeedStore, now: number) {
  const logs = (await readLogRows(store, now)).map((w) => ({
    log: w.log,
    objectId: w.objectId,
    status: w.status,
    statusReason: w.statusReason,
    coveredFrom: iso(w.coverageStart),
    coveredUntil: iso(w.windowEnd),
    gap: gapOf(w),
    lagSeconds: w.lagSeconds,
    localLagSeconds: w.windowEnd === null ? null : Math.round((now - w.windowEnd) / 1000),
    lastSuccessAt: iso(w.lastSuccessAt),
    lastError: w.lastError,
    consecutiveFailures: w.consecutiveFailures,
    entriesIngested: w.entriesIngested,
    sortOrder: w.sortOrder,
    estimatedRatePerHour: w.ratePerHour,
    nextPollAt: iso(w.nextPollAt),
  }));
  const sinks = (await readSinkRows(store, now)).map((s) => ({
    name: s.name,
    type: s.type,
    active: s.active,
    connected: s.connected,
    pending: s.pending,
    delivered: s.delivered,
    dead: s.dead,
    oldestPendingAgeSeconds: s.oldestPendingAgeSeconds,
    consecutiveFailures: s.consecutiveFailures,
    lastError: s.lastError,
    lastDeliveryAt: iso(s.lastDeliveryAt),
    circuit: s.circuit,
    disabledReason: s.disabledReason,
    failingSince: iso(s.failingSince),
    filtered: s.filtered,
    stateSource: RECORDED,
  }));
  return {
    generatedAt: new Date(now).toISOString(),
    logs,
    sinks,
    journalEvents: await store.journalSize(),
    quarantinedEntries: await store.quarantine.count(),
    budget: await budgetOf(store),
    daemon: { reachable: false as const, url: null, reason: 'not asked' },
  };
}

export function formatStatusReport(report: StatusReport): string {
  const lines: string[] = [`changefeed status at ${report.generatedAt}`, '', 'LOGS'];
  lines.push(
    table(
      ['log', 'object', 'status', 'covered from', 'covered until', 'lag s', 'ingested', 'rate/h', 'next poll', 'gap'],
      report.logs.map((l) => [
        l.log,
        // The id and the gap's reason (the poll's error) hold what the service sent.
        terminalSafe(l.objectId || '-'),
        l.status,
        l.coveredFrom ?? '-',
        l.coveredUntil ?? '-',
        l.localLagSeconds !== null && l.localLagSeconds < 0
          ? `${l.localLagSeconds} (cursor ahead of local time!)`
          : (l.lagSeconds?.toString() ?? '-'),
        String(l.entriesIngested),
        l.estimatedRatePerHour === null ? '-' : l.estimatedRatePerHour.toFixed(2),
        l.nextPollAt ?? '-',
        l.gap ? `since ${l.gap.from}: ${terminalSafe(l.gap.reason)}` : '',
      ]),
    ),
  );
  lines.push('', 'SINKS');
  lines.push(
    table(
      [
        'sink',
        'type',
        'active',
        'connected',
        'circuit',
        'pending',
        'delivered',
        'dead',
        'filtered',
        'oldest pending s',
        'last error',
      ],
      report.sinks.map((s) => [
        s.name,
        s.type,
        s.active ? 'yes' : 'no',
        `${s.connected ? 'yes' : 'no'}${s.stateSource === 'recorded' ? ' (recorded)' : ''}`,
        s.disabledReason ? 'disabled' : s.circuit,
        String(s.pending),
        String(s.delivered),
        String(s.dead),
        String(s.filtered),
        s.oldestPendingAgeSeconds?.toString() ?? '-',
        sinkProblem(s),
      ]),
    ),
  );
  const d = report.daemon;
  lines.push(
    '',
    d.reachable
      ? `sink state: live from the running daemon at ${d.url}${d.holder ? ` (${d.holder}, holding the tenant)` : ''}`
      : `sink state: ${d.reason}${d.url ? ` at ${d.url}` : ''}; "(recorded)" marks the last value the daemon stored, active follows the current config`,
  );
  const gaps = report.logs.filter((l) => l.gap).length;
  lines.push(
    '',
    gaps === 0
      ? 'coverage: every watched log is read without gaps'
      : `coverage: ${gaps} log${gaps === 1 ? '' : 's'} with a gap (see the gap column)`,
  );
  lines.push(`journal: ${report.journalEvents} events`);
  lines.push(
    report.quarantinedEntries === 0
      ? 'quarantine: empty'
      : `quarantine: ${report.quarantinedEntries} entries the service sent could not become events (see changefeed quarantine list)`,
  );
  const b = report.budget;
  lines.push(
    b
      ? `budget (as of ${b.at}): ${b.allowancePerHour} requests/h allowed, ${b.pollBudgetPerHour ?? '-'} ` +
          `/h for polls now, ${b.serverRemaining ?? '?'} left in the server's window until ` +
          `${b.resetAt ?? '?'}${b.blockedUntil ? `, paused after a 429 until ${b.blockedUntil}` : ''}`
      : 'budget: not recorded yet (the daemon writes it while polling)',
  );
  return lines.join('\n');
}

/** The last-error column: why a sink is disabled and how to enable it, since when it fails, or its last error. */
function sinkProblem(s: SinkStatus): string {
  // The errors quote what destinations answered: one line, whatever they sent.
  if (s.disabledReason)
    return `disabled: ${terminalSafe(s.disabledReason)} (fix it, then: changefeed sinks enable ${s.name})`;
  if (s.failingSince) return `failing since ${s.failingSince}: ${terminalSafe(s.lastError ?? '')}`;
  return terminalSafe(s.lastError ?? '');
}

function table(header: string[], rows: string[][]): string {
  if (rows.length === 0) return '  (none)';
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (r: string[]): string => `  ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ')}`.trimEnd();
  return [fmt(header), ...rows.map(fmt)].join('\n');
}
