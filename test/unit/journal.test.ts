import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { MAX_SCAN_POSITIONS } from '../../src/store/storeRecords.js';
import type { ChangeCloudEvent } from '../../src/events/cloudEvent.js';
import { makeTempDir } from '../support/tempDir.js';

let store: ChangefeedStore | undefined;
afterEach(() => store?.close());

function storeWith(events: number, logOf: (i: number) => 'career' | 'skill'): ChangefeedStore {
  const opened = SqliteChangefeedStore.open(join(makeTempDir(), 'changefeed.sqlite'));
  opened.db.transaction(() => {
    for (let i = 1; i <= events; i++) {
      const log = logOf(i);
      const event = { id: `e${i}`, type: `test.${log}.changed`, data: {} } as unknown as ChangeCloudEvent;
      opened.outbox.append(event, { log, objectId: 'o1', performedAt: i, now: i });
    }
  })();
  return opened;
}

describe('journal pages', () => {
  it('look at no more than MAX_SCAN_POSITIONS positions: a rare filter is searched in bounded stretches', async () => {
    const total = 2 * MAX_SCAN_POSITIONS + 500;
    store = storeWith(total, (i) => (i === total ? 'skill' : 'career'));
    const first = await store.journal.page(0, 100, { log: 'skill' });
    expect(first).toEqual({ events: [], next: MAX_SCAN_POSITIONS, reachedHead: false });
    const second = await store.journal.page(first.next, 100, { log: 'skill' });
    expect(second).toEqual({ events: [], next: 2 * MAX_SCAN_POSITIONS, reachedHead: false });
    const third = await store.journal.page(second.next, 100, { log: 'skill' });
    expect(third.events.map((e) => e.seq)).toEqual([total]);
    expect(third).toMatchObject({ next: total, reachedHead: true });
  });

  it('a full page ends at its last event, wherever the head is', async () => {
    store = storeWith(50, () => 'career');
    const page = await store.journal.page(10, 5);
    expect(page.events.map((e) => e.seq)).toEqual([11, 12, 13, 14, 15]);
    expect(page).toMatchObject({ next: 15, reachedHead: false });
    expect(await store.journal.page(45, 100)).toMatchObject({ next: 50, reachedHead: true });
  });
});
