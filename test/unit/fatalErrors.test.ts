import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { exitOnEscapedErrors, FATAL_MESSAGE } from '../../src/cli/fatalErrors.js';
import { createLogger } from '../../src/observe/createLogger.js';

describe('the last resort of `changefeed run`', () => {
  it('logs an escaped rejection or exception at fatal and exits 1', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      destination: new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    });
    const exits: number[] = [];
    const uninstall = exitOnEscapedErrors(logger, (code) => exits.push(code));
    try {
      process.emit('unhandledRejection', new Error('refused'), Promise.resolve());
      (process.emit as (event: string, ...args: unknown[]) => boolean)('uncaughtException', new Error('thrown'));
    } finally {
      uninstall();
    }
    expect(exits).toEqual([1, 1]);
    const logged = lines.map((l) => JSON.parse(l) as { level: number; msg: string; err: string; origin: string });
    expect(logged.map((l) => [l.level, l.msg, l.origin])).toEqual([
      [60, FATAL_MESSAGE, 'unhandledRejection'],
      [60, FATAL_MESSAGE, 'uncaughtException'],
    ]);
    expect(logged.map((l) => l.err)).toEqual([expect.stringContaining('refused'), expect.stringContaining('thrown')]);
  });
});
