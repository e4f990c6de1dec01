import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { storePath } from '../../src/store/sqlite/database.js';
import { runCli } from '../support/daemonProcess.js';
import { makeTempDir } from '../support/tempDir.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';

describe('changefeed status of a large company', () => {
  it('writes the whole report of 6,000 logs to a pipe before it exits (not the first 64 KiB)', async () => {
    const dir = makeTempDir();
    const stateDir = join(dir, 'state');
    const store = openSqliteStoreFile(storePath(stateDir));
    const now = Date.now();
    for (let i = 0; i < 6_000; i++)
      await store.watchedLogs.registerAll([
        { log: 'career', objectId: `car_${i}`, origin: 'discovered', coverageStart: now, now },
      ]);
    await store.close();
    const config = join(dir, 'changefeed.yaml');
    writeFileSync(
      config,
      `stateDir: ${stateDir}\nhttp: { port: 9 }\nsinks: [{ name: out, type: file, path: ${join(dir, 'out.jsonl')} }]\n`,
    );
    const status = await runCli(['status', '--json', '--config', config]);
    expect(status.status, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { logs: unknown[] }).logs).toHaveLength(6_000);
  }, 60_000);
});
