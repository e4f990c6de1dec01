import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { writeCliConfig } from '../support/cliConfig.js';
import { runCliInProcess } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';

const OLDER =
  "the store at /state/changefeed.sqlite has schema version 100, older than this build's (101); start the " +
  'daemon of this build once, which migrates it, then run this command again';

// No release has a migration yet (both engines are at the baseline), so no store of an older
// schema can be made: the engine's refusal, as both engines throw it to a reader, stands in for one.
// A module mock: this file is in vitest.config.ts's MOCKING list, isolated from the shared files.
vi.mock('../../src/store/openStoreBackend.js', async () => {
  const { OlderSchemaError } = await import('../../src/store/storeError.js');
  return { openStoreBackend: () => Promise.reject(new OlderSchemaError(OLDER)) };
});

/** What docs/operations.md ("Schema changes") says each read-only command does on an older store. */
describe('read-only commands on a store of an older schema', () => {
  const config = writeCliConfig(makeTempDir(), 'http://127.0.0.1:9');

  it.each([[['status']], [['plan']], [['quarantine', 'list']]])(
    '%j refuses it, naming both versions and what to do, and exits 1',
    async (args) => {
      const result = await runCliInProcess([...args, '--config', config]);
      expect(result.status).toBe(1);
      expect(result.stderr).toContain('has schema version 100, older than this build');
      expect(result.stderr).toContain('start the daemon of this build once');
    },
  );

  it('check (PostgreSQL) reports its lease check failed with the refusal', async () => {
    const dir = makeTempDir();
    const postgres = writeCliConfig(dir, 'http://127.0.0.1:9', {
      extra: ['store: { url: "postgres://changefeed@127.0.0.1:5432/test" }'],
    });
    const result = await runCliInProcess(['check', '--config', postgres], { CHANGEFEED_API_KEY: 'cf_test_key' });
    expect(result.status).toBe(1);
    const output = `${result.stdout}${result.stderr}`;
    expect(output).toMatch(/cannot read who holds tenant default: .*older than this build/);
    // The store is reachable and the URL right: the fix is the migration, not store.url.
    expect(output).toContain('start the daemon of this build once (it migrates the store), then run check again');
    expect(output).not.toContain('check store.url');
  });

  it('tenants list reads no records there and answers from the tenant files (a deployment gate runs it first)', async () => {
    const tenantsDir = join(makeTempDir(), 'tenants');
    mkdirSync(tenantsDir);
    writeFileSync(join(tenantsDir, 'acme.yaml'), 'api: { apiKey: secret-acme-0001 }\n');
    const result = await runCliInProcess(['tenants', 'list', '--config', config, '--json'], {
      CHANGEFEED_TENANTS_DIR: tenantsDir,
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      tenants: [expect.objectContaining({ name: 'acme', valid: true })],
    });
  });
});
