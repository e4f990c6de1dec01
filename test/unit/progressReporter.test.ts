import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgressReporter, formatProgressLine, progressLineDue } from '../../src/cli/progressReporter.js';

function collector(isTTY = false): Writable & { isTTY: boolean; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return Object.assign(stream, { isTTY, text: () => text });
}

describe('progress lines', () => {
  it.each([
    // last (at, done), next (at, done), total, due
    [{ at: 0, done: 0 }, { at: 1_999, done: 5 }, 1000, false],
    [{ at: 0, done: 0 }, { at: 2_000, done: 5 }, 1000, true],
    [{ at: 0, done: 0 }, { at: 10, done: 900 }, 1000, false],
    [{ at: 0, done: 100 }, { at: 10, done: 200 }, 1000, true],
    [{ at: 0, done: 100 }, { at: 10, done: 199 }, 1000, false],
    [{ at: 0, done: 5 }, { at: 5_000, done: 5 }, 1000, false],
    [{ at: 0, done: 0 }, { at: 1, done: 1 }, 0, false],
  ])('from %o to %o of %i: due %s', (last, next, total, due) => {
    expect(progressLineDue(last, next, total, 2_000)).toBe(due);
  });

  it('says counts, percentage, rate and time left, and the time taken at the end', () => {
    const what = { label: 'store migrate default', unit: 'rows', total: 120_000 };
    expect(formatProgressLine(what, 0, 0)).toBe('store migrate default: 0/120000 rows (0%)');
    expect(formatProgressLine(what, 12_000, 2_000)).toBe(
      'store migrate default: 12000/120000 rows (10%), 6000 rows/s, about 18 s left',
    );
    expect(formatProgressLine(what, 12_000, 60_000)).toBe(
      'store migrate default: 12000/120000 rows (10%), 200 rows/s, about 9 min left',
    );
    expect(formatProgressLine(what, 120_000, 19_700)).toBe(
      'store migrate default: 120000/120000 rows (100%), done in 20 s',
    );
  });

  it('writes a line every 2 s or every tenth of the work, and one at the end, when not on a terminal', () => {
    const stream = collector();
    let now = 1_000;
    const progress = createProgressReporter({
      label: 'replay to hook',
      unit: 'events',
      total: 1_000,
      stream,
      now: () => now,
    });
    for (let done = 10; done <= 1_000; done += 10) {
      now += 100;
      progress.update(done);
    }
    progress.stop();
    const lines = stream.text().trimEnd().split('\n');
    // 100 updates 100 ms apart: the first line after 2 s, then one per tenth (each 1 s), the last
    // at 100%, none repeated by stop.
    expect(lines).toHaveLength(9);
    expect(lines[0]).toBe('replay to hook: 200/1000 events (20%), 100 events/s, about 8 s left');
    expect(lines.at(-1)).toBe('replay to hook: 1000/1000 events (100%), done in 10 s');
  });

  it('paces lines by time when a tenth takes longer than 2 s', () => {
    const stream = collector();
    let now = 0;
    const progress = createProgressReporter({ label: 'x', unit: 'rows', total: 1_000_000, stream, now: () => now });
    for (let done = 1; done <= 100; done++) {
      now += 500;
      progress.update(done);
    }
    progress.stop();
    // 50 s of updates: a line each 2 s, the last one at the last update, not repeated by stop.
    const lines = stream.text().trimEnd().split('\n');
    expect(lines).toHaveLength(25);
    expect(lines.at(-1)).toBe('x: 100/1000000 rows (0%), 2 rows/s, about 139 h left');
  });

  it('draws a bar on a terminal instead of lines', () => {
    const stream = collector(true);
    const progress = createProgressReporter({
      label: 'replay to hook',
      unit: 'events',
      total: 10,
      stream,
      now: () => 0,
    });
    progress.update(10);
    progress.stop();
    expect(stream.text()).toContain('replay to hook [');
    expect(stream.text()).toContain('100% | 10/10 events');
  });
});
