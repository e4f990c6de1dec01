/** A half-open time range [from, to) in the service's clock, epoch ms. */
export interface TimeWindow {
  from: number;
  to: number;
}

export const toIso = (ms: number): string => new Date(ms).toISOString();

/**
 * The next window of a windowed log: it starts `overlapMs` before the end of the last one (so
 * entries the service records late, with an earlier performedAt, are still found) but never
 * before `coverageStart`, and ends at the service's now. Undefined when there is nothing to read.
 */
export function nextWindow(args: {
  windowEnd: number;
  coverageStart: number;
  overlapMs: number;
  serverNow: number;
}): TimeWindow | undefined {
  const from = Math.max(args.coverageStart, args.windowEnd - args.overlapMs);
  const to = Math.floor(args.serverNow);
  return to > from ? { from, to } : undefined;
}

/**
 * The cursor to read from. A cursor later than the service's now (left by a Date header believed
 * ahead) claims coverage of time that has not come: read again from when the log was last polled
 * successfully, in the service's time, so what was written since then is read; what was read
 * twice is dropped by id.
 */
export function believableCursor(cursor: number, serverNow: number, lastSuccessServerTime: number | undefined): number {
  if (cursor <= serverNow) return cursor;
  return Math.min(serverNow, lastSuccessServerTime ?? serverNow);
}

/** Halves a window that holds more entries than offsets can reach; undefined when it cannot be split. */
export function splitWindow(window: TimeWindow): [TimeWindow, TimeWindow] | undefined {
  if (window.to - window.from < 2) return undefined;
  const mid = window.from + Math.floor((window.to - window.from) / 2);
  return [
    { from: window.from, to: mid },
    { from: mid, to: window.to },
  ];
}
