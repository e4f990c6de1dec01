import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { StateDirLock } from '../../src/store/stateDirLock.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { prefilledStore } from '../support/prefilledStore.js';
import { makeTempDir } from '../support/tempDir.js';

// A daemon on SQLite holds its state directory's lock for its whole life: holding it here is
// exactly what a live daemon looks like to a command.
describe('replay beside a live daemon on SQLite', () => {
  it('refuses to deliver, saying what to do, and --queue-only hands the events to the daemon', async () => {
    const dir = makeTempDir();
    const { store } = await prefilledStore(20, [{ name: 'a', type: 'file' }], 5, dir);
    await store.close();
    const config = join(dir, 'changefeed.yaml');
    writeFileSync(
      config,
      [
        `stateDir: ${dir}`,
        'sinks:',
        ...['a', 'b'].map((n) => `  - { name: ${n}, type: file, path: ${join(dir, `${n}.jsonl`)} }`),
      ].join('\n'),
    );
    const replay = (...extra: string[]) =>
      runCli(['replay', '--config', config, '--sink', 'b', '--since', '2000-01-01T00:00:00Z', ...extra]);

    const daemon = StateDirLock.acquire(dir);
    try {
      const refused = await replay();
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain('STATE_DIR_LOCKED');
      expect(refused.stderr).toContain('--queue-only');
      expect(refused.stderr).toContain('stop the daemon');
      expect(existsSync(join(dir, 'b.jsonl'))).toBe(false);

      const queued = await replay('--queue-only');
      expect(queued.status, queued.stderr).toBe(0);
      expect(queued.stdout).toContain('queued 20 events');
      expect(existsSync(join(dir, 'b.jsonl'))).toBe(false);
    } finally {
      daemon.release();
    }
    const reopened = openSqliteStoreFile(join(dir, 'changefeed.sqlite'), { readonly: true });
    try {
      expect(await reopened.outbox.pending('b', 0, 100)).toHaveLength(20);
    } finally {
      await reopened.close();
    }

    // With the daemon gone, replay delivers, and gives the lock back for the daemon to restart.
    const delivered = await replay();
    expect(delivered.status, delivered.stderr).toBe(0);
    expect(delivered.stdout).toContain('0 still pending');
    // Not a terminal: progress in lines on stderr, the last one at the end.
    expect(delivered.stderr).toMatch(/replay to b: 20\/20 events \(100%\), done in \d+ s\n$/);
    expect(existsSync(join(dir, 'b.jsonl'))).toBe(true);
    StateDirLock.acquire(dir).release();
  });
});
