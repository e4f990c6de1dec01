import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { closeAfterTest } from '../support/closeAfterTest.js';
import { startDaemonProcess, type DaemonProcess } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';

function startDaemon(dir: string, api: string): { daemon: DaemonProcess; file: string } {
  const file = join(dir, 'changefeed.yaml');
  writeFileSync(
    file,
    [
      `api: { baseUrl: "http://127.0.0.1:1", ${api} }`,
      'watch: { schedule: { firstPollWithinSeconds: 1 } }',
      `stateDir: ${join(dir, 'state')}`,
      `sinks: [{ name: out, type: file, path: ${join(dir, 'events.jsonl')} }]`,
      'http: { port: 0 }',
      '',
    ].join('\n'),
  );
  const daemon = startDaemonProcess(['--config', file]);
  closeAfterTest(async () => {
    daemon.child.kill('SIGKILL');
    await daemon.exited();
  });
  return { daemon, file };
}

// Before the fix each of these reads blocked the whole process on the FIFO: no log line, no
// answer on /health, and SIGTERM never handled, until something wrote to it or SIGKILL.
describe('a FIFO planted where the daemon reads an operator file', () => {
  it('is a SIGHUP reload refused as invalid, naming the file; the daemon keeps running and drains on SIGTERM', async () => {
    const dir = makeTempDir();
    const { daemon, file } = startDaemon(dir, 'apiKey: k_test_0123456789abcdef0123456789abcdef');
    await daemon.waitForLog('changefeed running');
    rmSync(file);
    execFileSync('mkfifo', [file]);
    daemon.child.kill('SIGHUP');
    await daemon.waitForLog('SIGHUP: the new configuration is invalid; still running on the previous one');
    expect(daemon.logs()).toContain(`cannot read config file ${file}: it is a FIFO, not a plain file`);
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited()).toBe(0);
  });

  it('is a key file refused at the next request, naming it; the daemon still drains on SIGTERM', async () => {
    const dir = makeTempDir();
    const key = join(dir, 'api-key');
    writeFileSync(key, 'k_test_0123456789abcdef0123456789abcdef\n');
    const { daemon } = startDaemon(dir, `apiKeyFile: ${key}`);
    await daemon.waitForLog('changefeed running');
    rmSync(key);
    execFileSync('mkfifo', [key]);
    await daemon.waitForLog(`cannot read secret file ${key}: it is a FIFO, not a plain file`);
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited()).toBe(0);
  });
});
