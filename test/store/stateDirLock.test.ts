import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { StateDirLock } from '../../src/store/stateDirLock.js';
import { runBundledScript } from '../support/bundledScript.js';
import { makeTempDir } from '../support/tempDir.js';

/**
 * A racing start's connection to the lock file, left where the race leaves it: in exclusive
 * locking mode a connection keeps every lock it took, so having read the schema it holds a shared
 * lock, and the other start's write of the same file is refused BUSY, as its own is.
 */
function racerReadingTheLockFile(stateDir: string): Database.Database {
  const racer = new Database(join(stateDir, 'changefeed.lock'));
  racer.pragma('locking_mode = EXCLUSIVE');
  racer.prepare('SELECT count(*) FROM sqlite_master').get();
  return racer;
}

describe('StateDirLock', () => {
  it('takes the lock when a racing start that held the file for a moment gives up', () => {
    const stateDir = makeTempDir();
    const racer = racerReadingTheLockFile(stateDir);
    const pauses: number[] = [];
    // The racer was refused too, and closed its connection: the next attempt finds the file free.
    const lock = StateDirLock.acquire(stateDir, (ms) => {
      pauses.push(ms);
      racer.close();
    });
    try {
      expect(pauses).toHaveLength(1);
      expect(() => StateDirLock.acquire(stateDir, () => undefined)).toThrow(/STATE_DIR_LOCKED|held by pid/);
    } finally {
      lock.release();
    }
  });

  it('leaves the directory free when the pid file cannot be written', () => {
    const stateDir = makeTempDir();
    // A directory where the pid file goes: the lock is taken, then the write of the pid fails.
    mkdirSync(join(stateDir, 'changefeed.pid'));
    // The pid file is named, not the lock file, which is fine and must not be removed for it.
    expect(() => StateDirLock.acquire(stateDir, () => undefined)).toThrow(
      expect.objectContaining({
        code: 'STORE_ERROR',
        message: expect.stringMatching(
          new RegExp(
            `^cannot write the pid of the state directory's holder to ${join(stateDir, 'changefeed.pid')}: .*EISDIR.*remove it`,
          ),
        ),
      }),
    );
    rmdirSync(join(stateDir, 'changefeed.pid'));
    const lock = StateDirLock.acquire(stateDir, () => undefined);
    lock.release();
  });

  it.each([
    [
      'holds other data',
      (file: string) => writeFileSync(file, 'not a database, but long enough to have a header'.repeat(4)),
    ],
    ['is a directory', (file: string) => mkdirSync(file)],
  ])('names the lock file and what to do when it %s, and takes it once that is removed', (_, plant) => {
    const stateDir = makeTempDir();
    const file = join(stateDir, 'changefeed.lock');
    plant(file);
    expect(() => StateDirLock.acquire(stateDir, () => undefined)).toThrow(
      expect.objectContaining({
        code: 'STORE_ERROR',
        message: expect.stringMatching(new RegExp(`^cannot lock the state directory with ${file}: .*remove it`)),
      }),
    );
    rmSync(file, { recursive: true });
    StateDirLock.acquire(stateDir, () => undefined).release();
  });

  it('names the state directory, not its lock file, when a file stands where the directory goes', () => {
    // stateDir itself a file, and a file one level up its path.
    for (const below of ['', 'under']) {
      const file = join(makeTempDir(), 'state');
      writeFileSync(file, 'a file');
      const stateDir = join(file, below);
      expect(() => StateDirLock.acquire(stateDir, () => undefined)).toThrow(
        expect.objectContaining({
          code: 'STORE_ERROR',
          message: expect.stringMatching(new RegExp(`^cannot make the state directory ${stateDir}: .*not a file`)),
        }),
      );
    }
  });

  it('does not write the pid through a symlink planted as the pid file', () => {
    const stateDir = makeTempDir();
    const target = join(makeTempDir(), 'precious');
    writeFileSync(target, 'keep me\n');
    symlinkSync(target, join(stateDir, 'changefeed.pid'));
    expect(() => StateDirLock.acquire(stateDir, () => undefined)).toThrow(
      expect.objectContaining({ code: 'STORE_ERROR', message: expect.stringContaining('ELOOP') }),
    );
    expect(readFileSync(target, 'utf8')).toBe('keep me\n');
  });

  it('refuses a FIFO planted as the pid file that something reads, writing nothing into it', () => {
    const stateDir = makeTempDir();
    const fifo = join(stateDir, 'changefeed.pid');
    execFileSync('mkfifo', [fifo]);
    // A reader: the open for writing succeeds, and the pid would go to whoever reads.
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      expect(() => StateDirLock.acquire(stateDir, () => undefined)).toThrow(
        expect.objectContaining({
          code: 'STORE_ERROR',
          message: expect.stringMatching(
            new RegExp(`^cannot write the pid .*${fifo} is a FIFO, not a plain file.*remove it`),
          ),
        }),
      );
      expect(readSync(reader, Buffer.alloc(64))).toBe(0);
    } finally {
      closeSync(reader);
    }
    rmSync(fifo);
    StateDirLock.acquire(stateDir, () => undefined).release();
  });

  it('refuses a FIFO planted as the pid file that nothing reads, instead of blocking the process', async () => {
    const stateDir = makeTempDir();
    const fifo = join(stateDir, 'changefeed.pid');
    execFileSync('mkfifo', [fifo]);
    expect(await acquireInChild(stateDir)).toMatch(
      new RegExp(`^STORE_ERROR: cannot write the pid .*${fifo}.*ENXIO.*remove it`),
    );
  });

  it('names no pid, without blocking, when the pid file of a held directory was swapped for a FIFO', async () => {
    const stateDir = makeTempDir();
    const holder = StateDirLock.acquire(stateDir);
    onTestFinished(() => holder.release());
    const pidFile = join(stateDir, 'changefeed.pid');
    rmSync(pidFile);
    execFileSync('mkfifo', [pidFile]);
    expect(await acquireInChild(stateDir)).toMatch(
      new RegExp(`^STATE_DIR_LOCKED: state directory ${stateDir} held by pid \\(unknown\\)`),
    );
  });

  it('names no pid when the pid file of a held directory holds no decimal pid, however Number() reads it', () => {
    const stateDir = makeTempDir();
    const holder = StateDirLock.acquire(stateDir);
    onTestFinished(() => holder.release());
    for (const text of ['0x1F\n', '1e3\n', '+12\n', '12.0\n', '0\n', '', 'pid\n', `${'9'.repeat(30)}\n`]) {
      writeFileSync(join(stateDir, 'changefeed.pid'), text);
      expect(() => StateDirLock.acquire(stateDir, () => undefined), JSON.stringify(text)).toThrow(
        expect.objectContaining({
          code: 'STATE_DIR_LOCKED',
          message: expect.stringContaining('held by pid (unknown)'),
        }),
      );
    }
  });

  it('lets go of the lock when its pid file cannot be removed, a directory swapped in', () => {
    const stateDir = makeTempDir();
    const holder = StateDirLock.acquire(stateDir);
    const pidFile = join(stateDir, 'changefeed.pid');
    rmSync(pidFile);
    mkdirSync(pidFile);
    holder.release();
    // The directory left in its place is named by the next start; once it is gone, that start runs.
    rmdirSync(pidFile);
    StateDirLock.acquire(stateDir, () => undefined).release();
  });

  it('a reload moving to another directory lets go of the old one even when its pid file cannot be removed', () => {
    const [oldDir, newDir] = [makeTempDir(), makeTempDir()];
    const held = StateDirLock.acquire(oldDir);
    rmSync(join(oldDir, 'changefeed.pid'));
    mkdirSync(join(oldDir, 'changefeed.pid'));
    const taken = StateDirLock.takeOver(held, newDir);
    try {
      rmdirSync(join(oldDir, 'changefeed.pid'));
      StateDirLock.acquire(oldDir, () => undefined).release();
    } finally {
      taken.release();
    }
    // The new directory is free once released: its lock was returned, not lost with the old one's error.
    StateDirLock.acquire(newDir, () => undefined).release();
  });

  it('refuses, after a bounded number of tries, while another daemon holds the directory', () => {
    const stateDir = makeTempDir();
    const holder = StateDirLock.acquire(stateDir);
    const pauses: number[] = [];
    try {
      expect(() => StateDirLock.acquire(stateDir, (ms) => pauses.push(ms))).toThrow(
        expect.objectContaining({
          code: 'STATE_DIR_LOCKED',
          message: expect.stringContaining(`held by pid ${process.pid}`),
        }),
      );
      expect(pauses.length).toBeGreaterThan(0);
      expect(pauses.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1_000);
    } finally {
      holder.release();
    }
  });
});

/**
 * What `StateDirLock.acquire(stateDir)` says in a child process: 'acquired' or `<code>: <message>`.
 * A child, because an open or read that blocks blocks its whole thread; one that blocks is killed
 * at runBundledScript's timeout. A child that says nothing is described instead (how it ended, its
 * stderr), so that a failing test shows why rather than an empty string.
 */
async function acquireInChild(stateDir: string): Promise<string> {
  const child = await runBundledScript(`import { StateDirLock } from './src/store/stateDirLock.ts';
    try { StateDirLock.acquire(${JSON.stringify(stateDir)}, () => undefined).release(); console.log('acquired'); }
    catch (error) { console.log(error.code + ': ' + error.message); }`);
  if (child.stdout) return child.stdout;
  const ended = child.error?.message ?? (child.signal ? `killed by ${child.signal}` : `exit ${child.status}`);
  return `(the child said nothing: ${ended}; stderr: ${JSON.stringify(child.stderr)})`;
}
