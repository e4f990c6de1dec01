import { existsSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { StateDirLock } from '../../src/store/stateDirLock.js';
import { noopLogger } from '../support/noopLogger.js';
import { makeTempDir } from '../support/tempDir.js';

const noPause = (): void => undefined;

function config(stateDir: string, port = 0) {
  return appConfigSchema.parse({
    api: { baseUrl: 'http://127.0.0.1:1', apiKey: 'k_test_0123456789abcdef0123456789abcdef' },
    sinks: [{ name: 'file', type: 'file', path: join(stateDir, 'events.jsonl') }],
    stateDir,
    http: { port },
  });
}

describe('a reload (SIGHUP) on a SQLite store', () => {
  it('keeps the state directory locked from the daemon it stops to the one it starts', async () => {
    const stateDir = makeTempDir();
    const before = new ChangefeedDaemon(config(stateDir), { logger: noopLogger });
    await before.start();
    const lock = await before.stopForReload();
    // The gap between the two daemons, where a `replay` or `store migrate` started now is refused.
    expect(() => StateDirLock.acquire(stateDir, noPause)).toThrow(
      expect.objectContaining({ code: 'STATE_DIR_LOCKED', message: expect.stringContaining(`${process.pid}`) }),
    );
    const after = new ChangefeedDaemon(config(stateDir), { logger: noopLogger }, lock);
    await after.start();
    expect(() => StateDirLock.acquire(stateDir, noPause)).toThrow(
      expect.objectContaining({ code: 'STATE_DIR_LOCKED' }),
    );
    await after.stop();
    StateDirLock.acquire(stateDir, noPause).release();
  });

  it('keeps the directory held when the new daemon fails to start, for the one the reload goes back to', async () => {
    const stateDir = makeTempDir();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as { port: number };
    const before = new ChangefeedDaemon(config(stateDir), { logger: noopLogger });
    await before.start();
    const lock = await before.stopForReload();
    try {
      const failing = new ChangefeedDaemon(config(stateDir, port), { logger: noopLogger }, lock);
      await expect(failing.start()).rejects.toThrow(/EADDRINUSE|in use/);
      // Let go here, a command could take the directory, and the reload's way back (taking it
      // again, which writes the pid file) failed on a full disk: the process exited.
      expect(() => StateDirLock.acquire(stateDir, noPause)).toThrow(
        expect.objectContaining({ code: 'STATE_DIR_LOCKED', message: expect.stringContaining(`${process.pid}`) }),
      );
      expect(existsSync(join(stateDir, 'changefeed.pid'))).toBe(true);
      const again = new ChangefeedDaemon(config(stateDir), { logger: noopLogger }, lock);
      await again.start();
      await again.stop();
      StateDirLock.acquire(stateDir, noPause).release();
    } finally {
      lock?.release();
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('lets the old directory go and takes the new one when the reload moved stateDir', async () => {
    const [first, second] = [makeTempDir(), makeTempDir()];
    const before = new ChangefeedDaemon(config(first), { logger: noopLogger });
    await before.start();
    const after = new ChangefeedDaemon(config(second), { logger: noopLogger }, await before.stopForReload());
    try {
      StateDirLock.acquire(first, noPause).release();
      expect(() => StateDirLock.acquire(second, noPause)).toThrow(
        expect.objectContaining({ code: 'STATE_DIR_LOCKED' }),
      );
    } finally {
      await after.stop();
    }
  });

  it('hands the lock over when the new stateDir names the same directory another way (a symlink)', async () => {
    const stateDir = makeTempDir();
    const link = join(makeTempDir(), 'link');
    symlinkSync(stateDir, link);
    const before = new ChangefeedDaemon(config(stateDir), { logger: noopLogger });
    await before.start();
    const after = new ChangefeedDaemon(config(link), { logger: noopLogger }, await before.stopForReload());
    try {
      await after.start();
      expect(() => StateDirLock.acquire(stateDir, noPause)).toThrow(
        expect.objectContaining({ code: 'STATE_DIR_LOCKED' }),
      );
    } finally {
      await after.stop();
    }
    StateDirLock.acquire(stateDir, noPause).release();
  });

  it('keeps the old directory held when the one the reload moves to is held by another daemon', async () => {
    const [first, second] = [makeTempDir(), makeTempDir()];
    const other = StateDirLock.acquire(second, noPause);
    const before = new ChangefeedDaemon(config(first), { logger: noopLogger });
    await before.start();
    const lock = await before.stopForReload();
    try {
      expect(() => new ChangefeedDaemon(config(second), { logger: noopLogger }, lock)).toThrow(
        expect.objectContaining({ code: 'STATE_DIR_LOCKED' }),
      );
      // Still held, for the reload to go back to the first directory without a gap.
      expect(() => StateDirLock.acquire(first, noPause)).toThrow(expect.objectContaining({ code: 'STATE_DIR_LOCKED' }));
      const again = new ChangefeedDaemon(config(first), { logger: noopLogger }, lock);
      await again.start();
      await again.stop();
      StateDirLock.acquire(first, noPause).release();
    } finally {
      lock?.release();
      other.release();
    }
  });

  it('hands over nothing when a shutdown was already stopping the daemon: that stop lets the lock go', async () => {
    const stateDir = makeTempDir();
    const daemon = new ChangefeedDaemon(config(stateDir), { logger: noopLogger });
    await daemon.start();
    const shutdown = daemon.stop();
    expect(await daemon.stopForReload()).toBeUndefined();
    await shutdown;
    StateDirLock.acquire(stateDir, noPause).release();
  });
});
