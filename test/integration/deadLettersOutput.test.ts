import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { storePath } from '../../src/store/sqlite/database.js';
import { entry, ingest, T } from '../store/contract/storeFixtures.js';
import { runCliInProcess } from '../support/runCli.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { makeTempDir } from '../support/tempDir.js';

// A destination's answer is hostile input: printed, its terminal escapes must not reach the
// operator's terminal.
describe('changefeed dead-letters list', () => {
  it('prints the destination answer with terminal escapes made visible, as text and as JSON', async () => {
    const stateDir = makeTempDir();
    const store = openSqliteStoreFile(storePath(stateDir));
    await store.sinks.activate([{ name: 'hook', type: 'webhook' }], T);
    await ingest(store, [entry('e-1')]);
    const [pending] = await store.outbox.pending('hook', 0, 10);
    await store.outbox.markDead(
      'hook',
      [{ seq: pending!.seq, error: 'HTTP 422 \u001b]0;owned\u0007', status: 422, response: 'bad \u001b[2J answer' }],
      T,
    );
    await store.close();
    const config = join(stateDir, 'changefeed.yaml');
    writeFileSync(
      config,
      `stateDir: ${stateDir}\nsinks: [{ name: hook, type: webhook, url: "http://127.0.0.1:9/h" }]\n`,
    );
    for (const json of [[], ['--json']]) {
      const result = await runCliInProcess(['dead-letters', 'list', '--config', config, ...json]);
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toContain('422');
      expect(result.stdout).not.toContain('\u001b');
    }
  });
});
