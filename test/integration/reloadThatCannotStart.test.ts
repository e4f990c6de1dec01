import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StateDirLock } from '../../src/store/stateDirLock.js';
import { closeAfterTest } from '../support/closeAfterTest.js';
import { startDaemonProcess, until } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';

const noPause = (): void => undefined;

function writeConfig(file: string, stateDir: string): void {
  writeFileSync(
    file,
    [
      'api: { baseUrl: "http://127.0.0.1:1", apiKey: k_test_0123456789abcdef0123456789abcdef }',
      `stateDir: ${stateDir}`,
      `sinks: [{ name: out, type: file, path: ${join(stateDir, 'events.jsonl')} }]`,
      'http: { port: 0 }',
      '',
    ].join('\n'),
  );
}

describe('a SIGHUP reload whose valid configuration cannot be started', () => {
  it('keeps running on the previous one, its state directory still locked, and drains on SIGTERM', async () => {
    const dir = makeTempDir();
    const [first, second] = [join(dir, 'first'), join(dir, 'second')];
    const file = join(dir, 'changefeed.yaml');
    writeConfig(file, first);
    // Another daemon holds the directory the new configuration moves to.
    const other = StateDirLock.acquire(second, noPause);
    closeAfterTest(() => Promise.resolve(other.release()));
    const daemon = startDaemonProcess(['--config', file]);
    closeAfterTest(async () => {
      daemon.child.kill('SIGKILL');
      await daemon.exited();
    });
    await daemon.waitForLog('changefeed running');
    writeConfig(file, second);
    daemon.child.kill('SIGHUP');
    // Before the fix the process ended here, through the last resort for escaped errors.
    const exited = daemon.exited().then((code) => {
      throw new Error(`the daemon exited ${code}: ${daemon.logs()}`);
    });
    await Promise.race([daemon.waitForLog('SIGHUP: running on the previous configuration'), exited]);
    expect(daemon.logs()).toContain('SIGHUP: the new configuration could not be started');
    expect(daemon.logs()).toContain(`state directory ${second} held by pid ${process.pid}`);
    // Still the one daemon of the first directory: a command there is refused.
    expect(() => StateDirLock.acquire(first, noPause)).toThrow(
      expect.objectContaining({ code: 'STATE_DIR_LOCKED', message: expect.stringContaining(`${daemon.child.pid}`) }),
    );
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited()).toBe(0);
    StateDirLock.acquire(first, noPause).release();
  });
});

/**
 * A daemon running on `file`, then sent a SIGHUP for it with a store.url where nothing answers (as
 * mistyped): returned while that reload's start waits for the database.
 */
async function daemonWaitingOnAReload(file: string) {
  const daemon = startDaemonProcess(['--config', file]);
  closeAfterTest(async () => {
    daemon.child.kill('SIGKILL');
    await daemon.exited();
  });
  await daemon.waitForLog('changefeed running');
  writeFileSync(file, `store: { url: "postgres://changefeed@127.0.0.1:1/changefeed" }\n`, { flag: 'a' });
  daemon.child.kill('SIGHUP');
  await daemon.waitForLog('the store cannot be opened yet');
  return daemon;
}

describe('a SIGHUP while a reload still waits for its store', () => {
  it('stops that start and reloads the configuration as the file now is', async () => {
    const dir = makeTempDir();
    const [first, second] = [join(dir, 'first'), join(dir, 'second')];
    const file = join(dir, 'changefeed.yaml');
    writeConfig(file, first);
    const daemon = await daemonWaitingOnAReload(file);
    // The operator's fix, sent while the start above still waits.
    writeConfig(file, second);
    daemon.child.kill('SIGHUP');
    const exited = daemon.exited().then((code) => {
      throw new Error(`the daemon exited ${code}: ${daemon.logs()}`);
    });
    // Before the fix this SIGHUP waited, unsaid, behind the start waiting for the database.
    await Promise.race([
      until(
        () => (daemon.logs().match(/changefeed running/g) ?? []).length === 2,
        15_000,
        'the fixed configuration running',
      ),
      exited,
    ]);
    expect(daemon.logs()).toContain(
      'SIGHUP: a reload is still starting (its store may not answer); stopping that start to reload again',
    );
    expect(daemon.logs()).not.toMatch(/uncaught|unhandled/i);
    expect(() => StateDirLock.acquire(second, noPause)).toThrow(expect.objectContaining({ code: 'STATE_DIR_LOCKED' }));
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited()).toBe(0);
  });
});

describe('an invalid configuration sent while a reload still waits for its store', () => {
  it('goes back to the previous configuration, not to nothing', async () => {
    const dir = makeTempDir();
    const first = join(dir, 'first');
    const file = join(dir, 'changefeed.yaml');
    writeConfig(file, first);
    const daemon = await daemonWaitingOnAReload(file);
    writeFileSync(file, 'watch: [not, a, mapping]\n', { flag: 'a' });
    daemon.child.kill('SIGHUP');
    const exited = daemon.exited().then((code) => {
      throw new Error(`the daemon exited ${code}: ${daemon.logs()}`);
    });
    await Promise.race([daemon.waitForLog('SIGHUP: running on the previous configuration'), exited]);
    expect(daemon.logs()).toContain('SIGHUP: the new configuration is invalid; going back to the previous one');
    expect(() => StateDirLock.acquire(first, noPause)).toThrow(expect.objectContaining({ code: 'STATE_DIR_LOCKED' }));
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited()).toBe(0);
    StateDirLock.acquire(first, noPause).release();
  });
});
