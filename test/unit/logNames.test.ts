import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileSinkFilter } from '../../src/deliver/sinkFilter.js';
import { sinkFilterSchema } from '../../src/sinkContract/deliveryConfig.js';
import { buildStatusReport, formatStatusReport } from '../../src/cli/statusReport.js';
import { parseLogName } from '../../src/logs.js';
import { watchConfigDeprecations, watchConfigSchema } from '../../src/poll/watchConfig.js';
import { storePath } from '../../src/store/sqlite/database.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { runCliInProcess } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { LoopbackService } from './loopbackService.js';

// Each log has one name wherever it is written (issue 26); the identity-provider log's older
// camel-case spelling is still taken on input, with a note saying what to write.
describe('parseLogName', () => {
  it.each([
    ['career', { kind: 'career' }],
    ['skill', { kind: 'skill' }],
    ['identity_provider', { kind: 'identity_provider' }],
    [
      'identityProvider',
      {
        kind: 'identity_provider',
        deprecated: 'the log name "identityProvider" is deprecated; write "identity_provider"',
      },
    ],
    ['identity-provider', undefined],
    ['Career', undefined],
    ['constructor', undefined],
  ])('%s', (name, expected) => {
    expect(parseLogName(name)).toEqual(expected);
  });
});

/** A config whose state directory holds an empty store, for commands that read one. */
async function configWithStore(): Promise<string> {
  const stateDir = makeTempDir();
  await openSqliteStoreFile(storePath(stateDir)).close();
  const file = join(stateDir, 'inspect.yaml');
  writeFileSync(
    file,
    `stateDir: ${stateDir}\nsinks: [{ name: file, type: file, path: ${join(stateDir, 'e.jsonl')} }]\n`,
  );
  return file;
}

describe('--log', () => {
  const quarantineList = async (log: string) =>
    runCliInProcess(['quarantine', 'list', '--config', await configWithStore(), '--log', log, '--json']);

  it('takes identity_provider without a word', async () => {
    const result = await quarantineList('identity_provider');
    expect(result.status).toBe(0);
    expect(result.stderr).toBe('');
  });

  it('takes identityProvider with a deprecation note', async () => {
    const result = await quarantineList('identityProvider');
    expect(result.status).toBe(0);
    expect(result.stderr).toContain('--log: the log name "identityProvider" is deprecated; write "identity_provider"');
  });

  it('refuses anything else as a usage error naming the one spelling', async () => {
    const result = await quarantineList('idp');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('expected one of career, skill, identity_provider, got "idp"');
  });
});

describe('the lines run writes', () => {
  it('name the identity-provider log identity_provider, in each poll line and the sweep report', async () => {
    const service = await LoopbackService.start(() => ({
      status: 401,
      headers: { 'content-type': 'application/problem+json' },
      body: { type: 'about:blank', title: 'Unauthorized', status: 401 },
    }));
    const config = writeCliConfig(makeTempDir(), `${service.url}/api`);
    const result = await runCliInProcess(['run', '--once', '--config', config], { CHANGEFEED_API_KEY: 'k_test_1' });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('"log":"identity_provider"');
    expect(result.stderr).toMatch(/"failures":\[\{"tenant":"default","log":"identity_provider"/);
    expect(result.stderr).not.toContain('identityProvider');
  }, 60_000);
});

describe('filter.logs', () => {
  const idp = { log: 'identity_provider' as const, type: 'com.skills.changefeed.identity_provider.user_added' };
  const career = { log: 'career' as const, type: 'com.skills.changefeed.career.level_added' };

  it('takes identity_provider without a word', () => {
    const notes: string[] = [];
    const accepts = compileSinkFilter(sinkFilterSchema.parse({ logs: ['identity_provider'] }), (n) => notes.push(n));
    expect([accepts(idp), accepts(career)]).toEqual([true, false]);
    expect(notes).toEqual([]);
  });

  it('takes identityProvider with one deprecation warning', () => {
    const notes: string[] = [];
    const filter = sinkFilterSchema.parse({ logs: ['identityProvider', 'identityProvider'] });
    const accepts = compileSinkFilter(filter, (n) => notes.push(n));
    expect([accepts(idp), accepts(career)]).toEqual([true, false]);
    expect(notes).toEqual(['filter.logs: the log name "identityProvider" is deprecated; write "identity_provider"']);
  });

  it('refuses any other name', () => {
    expect(sinkFilterSchema.safeParse({ logs: ['identity-provider'] }).success).toBe(false);
  });
});

describe('watch.sortOrder', () => {
  const deprecated = 'watch.sortOrder: the log name "identityProvider" is deprecated; write "identity_provider"';
  it.each([
    ['nothing', {}, 'auto', []],
    ['identity_provider', { identity_provider: 'oldest-first' }, 'oldest-first', []],
    ['identityProvider', { identityProvider: 'newest-first' }, 'newest-first', [deprecated]],
  ])('takes %s', (_, sortOrder, expected, notes) => {
    const watch = watchConfigSchema.parse({ sortOrder });
    expect(watch.sortOrder.identity_provider).toBe(expected);
    expect(watchConfigDeprecations(watch)).toEqual(notes);
  });

  it('refuses both spellings at once rather than letting one silently win', () => {
    const result = watchConfigSchema.safeParse({
      sortOrder: { identity_provider: 'oldest-first', identityProvider: 'newest-first' },
    });
    expect(result.error?.issues).toEqual([
      expect.objectContaining({
        path: ['sortOrder', 'identityProvider'],
        message: 'is the deprecated spelling of identity_provider; write identity_provider only',
      }),
    ]);
  });
});

describe('changefeed status', () => {
  it('names the identity-provider log identity_provider', async () => {
    const store = openSqliteStoreFile(storePath(makeTempDir()));
    try {
      const now = Date.UTC(2026, 10, 22, 12);
      await store.watchedLogs.registerAll([
        { log: 'identity_provider', objectId: '', origin: 'config', coverageStart: now, now },
      ]);
      const report = await buildStatusReport(store, now);
      expect(report.logs.map((l) => l.log)).toEqual(['identity_provider']);
      expect(formatStatusReport(report)).toMatch(/^\s*identity_provider\s/m);
    } finally {
      await store.close();
    }
  });
});
