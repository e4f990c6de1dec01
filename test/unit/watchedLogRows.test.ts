import { describe, expect, it } from 'vitest';
import { fromRow, watchedLogFromRow, type RowOf } from '../../src/store/storedRows.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';

/** A row as the driver hands it: every text a string of its own, built at run time. */
function row(): RowOf<WatchedLog> {
  const fresh = (text: string): string => [...text].join('');
  return {
    log: fresh('skill') as WatchedLog['log'],
    object_id: fresh('skl_1'),
    origin: fresh('discovered') as WatchedLog['origin'],
    status: fresh('active') as WatchedLog['status'],
    status_reason: null,
    coverage_start: 1_764_000_000_123,
    window_end: null,
    sort_order: fresh('newest-first') as WatchedLog['sortOrder'],
    last_poll_at: 1_764_000_100_456,
    last_success_at: 1_764_000_100_456,
    last_error: null,
    consecutive_failures: 0,
    next_poll_at: 1_764_000_200_789,
    entries_ingested: 12,
    created_at: 1_764_000_000_000,
    first_poll_by: 1_764_000_060_000,
  };
}

describe('a watched log read from the store', () => {
  it('is the record the generic row mapping makes, field for field and in its order', () => {
    const mapped = watchedLogFromRow(row());
    expect(mapped).toStrictEqual(fromRow<WatchedLog>(row()));
    expect(Object.keys(mapped)).toEqual(Object.keys(fromRow<WatchedLog>(row())));
  });

  it('keeps the same record whichever of its text columns are null', () => {
    const nulls = { ...row(), sort_order: null, status_reason: 'gone (404)', last_error: 'timeout' };
    expect(watchedLogFromRow(nulls)).toStrictEqual(fromRow<WatchedLog>(nulls));
  });
});
