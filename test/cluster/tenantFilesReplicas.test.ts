import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../support/daemonProcess.js';
import { connectAdmin, simulatedCompanies, startReplicaSet, writeRound } from './replicaHarness.js';
import { acquisitions } from './replicaRequests.js';

const admin = await connectAdmin('the tenant files test of replicas needs PostgreSQL');
const LEASE_SECONDS = 6;
const TENANTS = 12;
/** The simulator's company without a tenant file at the start. */
const ADDED = TENANTS;

afterAll(async () => {
  await admin?.end();
});

/** A replica's log, one parsed JSON line each, in the order written. */
type LogLine = { time: number; msg: string; tenant?: string; added?: string[]; removed?: string[]; dealt?: number };
function logLines(text: string): LogLine[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

/** The index of the first line that `matches`; fails the test when there is none. */
function indexOf(lines: readonly LogLine[], what: string, matches: (line: LogLine) => boolean): number {
  const i = lines.findIndex(matches);
  expect(i, `a log line: ${what}`).toBeGreaterThanOrEqual(0);
  return i;
}

/** How many lines with message `msg` lie strictly between lines `from` and `to` and were logged after `after`. */
function countBetween(lines: readonly LogLine[], msg: string, from: number, to: number, after = 0): number {
  return lines.slice(from + 1, to).filter((l) => l.msg === msg && l.time > after).length;
}

describe.skipIf(!admin)('tenant files added and removed while replicas run', () => {
  it('an added tenant starts on one replica in the first lease round that counts it; a removed one stops on its holder at the first read that misses it', async () => {
    const simulator = await simulatedCompanies(34, TENANTS + 1);
    // Each of a tenant's 4 logs polled about every second: a removed tenant still polled after its stop shows.
    const set = startReplicaSet(admin!, simulator, {
      leaseSeconds: LEASE_SECONDS,
      companies: TENANTS,
      readsPerHour: 14_400,
    });
    const replicas = set;
    // Debug: each replica logs every read of the tenants directory and every lease round, so the
    // checks below count reads and rounds, which a loaded machine stretches as much as the waits.
    for (const id of ['replica-a', 'replica-b']) set.start(id, { CHANGEFEED_LOG_LEVEL: 'debug' });
    await until(
      async () => {
        const holders = [...(await replicas.holders()).values()];
        return (
          holders.length === TENANTS &&
          ['replica-a', 'replica-b'].every((id) => holders.filter((h) => h === id).length === TENANTS / 2)
        );
      },
      90_000,
      'every tenant leased, six on each replica',
    );
    writeRound(simulator);
    const logs = () => new Map([...replicas.replicas].map(([id, replica]) => [id, replica.logs()]));

    // Added: the watchers see the file (fs.watch, else the rescan), and the next lease round of
    // the replica with room for it (13 over 2: replica-a may hold 7) takes it.
    const added = set.tenantName(ADDED);
    const addedAt = Date.now();
    set.writeTenantFile(ADDED);
    await until(() => simulator.requests.some((r) => r.company === ADDED), 60_000, `the first request for ${added}`);
    const first = simulator.requests.find((r) => r.company === ADDED)!;
    const takers = acquisitions(logs()).filter((a) => a.tenant === added);
    expect(takers.map((a) => a.instanceId)).toEqual([first.instanceId]);
    const holderLog = logLines(set.replicas.get(first.instanceId!)!.logs());
    const seen = indexOf(holderLog, `${added} seen`, (l) => l.msg === 'tenants changed' && !!l.added?.includes(added));
    const acquired = indexOf(
      holderLog,
      `${added} acquired`,
      (l) => l.msg.startsWith('lease acquired') && l.tenant === added,
    );
    console.log(
      `added ${added}: seen by ${first.instanceId} ${holderLog[seen]!.time - addedAt} ms after the file was written, ` +
        `its lease acquired ${holderLog[acquired]!.time - holderLog[seen]!.time} ms after that, first request ${first.at - addedAt} ms after the write; ` +
        `directory reads ended after the write until seen: ${countBetween(holderLog, 'tenants directory read', -1, seen, addedAt)}, ` +
        `lease rounds ended between seen and acquired: ${countBetween(holderLog, 'lease round', seen, acquired)}`,
    );
    // Seen by the first read of the directory that began after the write (fs.watch wakes it
    // sooner than the rescan): besides the read that saw it, only one in progress at the write
    // may have ended since. Each read is logged before its change is applied.
    expect(countBetween(holderLog, 'tenants directory read', -1, seen, addedAt)).toBeLessThanOrEqual(2);
    // Taken in the first lease round that counted it: a round under way when it was seen may end
    // without it, having read the tenants before (it dealt 12), never one that dealt all 13. A
    // tenant left for a later round, a rebalance or a lease expiry shows as such a round.
    expect(seen).toBeLessThan(acquired);
    const roundsLeavingIt = holderLog
      .slice(seen + 1, acquired)
      .filter((l) => l.msg === 'lease round' && l.dealt === TENANTS + 1);
    expect(roundsLeavingIt).toEqual([]);

    // Removed: its holder stops it (a drain) and releases the lease as soon as its watcher sees
    // the file gone; no lease round is involved. The others never take it, having seen it go too.
    const removed = set.tenantName(0);
    const holder = (await set.holders()).get(removed)!;
    const removedAt = Date.now();
    set.removeTenantFile(0);
    await set.replicas.get(holder)!.waitForLog(`"tenant":"${removed}","msg":"tenant file removed`, 30_000);
    await until(
      () =>
        [...logs().values()].every((text) =>
          logLines(text).some((l) => l.msg === 'tenants changed' && !!l.removed?.includes(removed)),
        ),
      30_000,
      `every replica to see ${removed} go`,
    );
    // Its lease row goes at the next lease round (forgotten once released and unconfigured).
    await until(
      async () => {
        const { rows } = await admin!.query(`SELECT 1 FROM "${replicas.schema}".changefeed_leases WHERE tenant = $1`, [
          removed,
        ]);
        return rows.length === 0;
      },
      30_000,
      `the lease row of ${removed} deleted`,
    );
    const removerLog = logLines(set.replicas.get(holder)!.logs());
    const gone = indexOf(
      removerLog,
      `${removed} seen gone`,
      (l) => l.msg === 'tenants changed' && !!l.removed?.includes(removed),
    );
    const stopped = indexOf(
      removerLog,
      `${removed} stopped`,
      (l) => l.tenant === removed && l.msg.startsWith('tenant file removed'),
    );
    const stoppedAt = removerLog[stopped]!.time;
    const readsUntilGone = countBetween(removerLog, 'tenants directory read', -1, gone, removedAt);
    const lastRequest = simulator.requests.filter((r) => r.company === 0).at(-1)!;
    console.log(
      `removed ${removed}: stopped by ${holder} ${stoppedAt - removedAt} ms after the file was removed, ` +
        `its last request ${lastRequest.at - removedAt} ms after the removal ` +
        `(${simulator.requests.filter((r) => r.company === 0 && r.at > removedAt - 10_000 && r.at <= removedAt).length} requests in the 10 s before); ` +
        `directory reads ended after the removal until seen: ${readsUntilGone}`,
    );
    // Seen gone by the first read that began after the removal, as the addition was.
    expect(readsUntilGone).toBeLessThanOrEqual(2);
    // Stopped after that by the watcher's change itself: no lease event of the holder (a
    // hand-over, a loss) stopped it.
    expect(gone).toBeLessThan(stopped);
    const leaseEvents = removerLog.filter(
      (l) => l.tenant === removed && l.time > removedAt && /^(lease lost|handing the tenant over)/.test(l.msg),
    );
    expect(leaseEvents).toEqual([]);
    expect(simulator.requests.filter((r) => r.company === 0 && r.at > stoppedAt)).toEqual([]);
    expect(acquisitions(logs()).filter((a) => a.tenant === removed && a.at > removedAt)).toEqual([]);
    // The other tenants go on, each leased by one of the replicas.
    const expected = Array.from({ length: ADDED }, (_, i) => set.tenantName(i + 1));
    await until(
      async () => JSON.stringify([...(await replicas.holders()).keys()].sort()) === JSON.stringify(expected),
      30_000,
      'every configured tenant leased',
    );
  }, 180_000);
});
