import { describe, expect, it } from 'vitest';
import { ActiveLogs } from '../../src/poll/activeLogs.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';

const log = (kind: WatchedLog['log'], objectId: string, status: WatchedLog['status'] = 'active') =>
  ({ log: kind, objectId, status }) as WatchedLog;

/** A store whose list of watched logs is `rows()` at each read. */
function storeListing(rows: () => WatchedLog[]): ChangefeedStore {
  return { watchedLogs: { list: () => Promise.resolve(rows()) } } as unknown as ChangefeedStore;
}

describe("the poll loop's active logs, counted by kind", () => {
  it('counts the active logs of each kind of the list read, and again after the next read', async () => {
    let rows = [log('career', 'c-1'), log('career', 'c-2'), log('skill', 's-1'), log('career', 'c-3', 'gone')];
    const active = new ActiveLogs(storeListing(() => rows));
    expect(active.count('career')).toBe(0);
    await active.refresh(0);
    expect([active.count('career'), active.count('skill'), active.count('identity_provider')]).toEqual([2, 1, 0]);
    rows = [...rows, log('skill', 's-2'), log('identity_provider', 'idp')];
    // Within the list's five minutes nothing is read, and the counts stay those of the list.
    await active.refresh(1_000);
    expect(active.count('skill')).toBe(1);
    active.markStale();
    await active.refresh(2_000);
    expect([active.count('career'), active.count('skill'), active.count('identity_provider')]).toEqual([2, 2, 1]);
  });
});
