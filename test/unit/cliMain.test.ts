import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCliConfig } from '../support/cliConfig.js';
import { runCliInProcess } from '../support/runCli.js';
import { makeTempDir } from '../support/tempDir.js';

const VERSION = (
  JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }
).version;

describe('changefeed, as people expect a command-line tool', () => {
  it.each([['--version'], ['-V'], ['version']])('%s prints the version of package.json and exits 0', async (flag) => {
    const result = await runCliInProcess([flag]);
    expect(result).toMatchObject({ status: 0, stdout: `${VERSION}\n` });
  });

  it.each([
    [['statu'], 'Did you mean status?'],
    [['dead-leters', 'list'], 'Did you mean dead-letters?'],
    [['status', '--jsn'], 'Did you mean --json?'],
    [['replay', '--since', '1h', '--snk', 'out'], 'Did you mean --sink?'],
    [['dead-letters', 'lst'], 'Did you mean list?'],
  ])('%j suggests the right spelling and exits 2', async (args, suggestion) => {
    const result = await runCliInProcess(args);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(suggestion);
  });

  it.each([[['status', '--help']], [['help', 'status']], [['status', '-h']]])(
    '%j prints the help of status alone and exits 0',
    async (args) => {
      const result = await runCliInProcess(args);
      expect(result.status).toBe(0);
      expect(result.stdout).toContain('Usage: changefeed status [options]');
      expect(result.stdout).toContain('--json');
      expect(result.stdout).not.toContain('store migrate');
      expect(result.stdout).toContain('Exit codes: 0 ok, 1 failure at run time, 2 bad usage or configuration');
    },
  );

  it('--help lists every command with a one-line summary, the exit codes and the environment', async () => {
    const result = await runCliInProcess(['--help']);
    expect(result.status).toBe(0);
    for (const line of [
      /^ {2}status \[options\] +cursors, lag, outbox depth/m,
      /^ {2}replay \[options\] +re-deliver events/m,
      /^ {2}version +print the version/m,
      /^ {2}2 +bad usage or configuration/m,
      /^Environment: CHANGEFEED_CONFIG, /m,
    ])
      expect(result.stdout).toMatch(line);
  });

  it('without a command it prints the help to stderr and exits 2', async () => {
    const result = await runCliInProcess([]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Usage: changefeed');
  });

  it.each([
    [['replay', '--sink', 'out', '--since', 'yesterday'], '--since'],
    [['replay', '--sink', 'out', '--since', '1h', '--until', '30'], '--until'],
  ])('%j names the flag and the accepted forms, exit 2', async (args, flag) => {
    const result = await runCliInProcess(args);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(flag);
    expect(result.stderr).toContain('ISO 8601');
    expect(result.stderr).toContain('1h');
  });

  it.each([
    [['--since', '1h', '--until', '2h'], '--until'],
    [['--since', '2026-11-20T00:00:00Z', '--until', '2026-11-20T00:00:00Z'], '--until'],
  ])('replay %j, an empty range, is refused with exit 2 before the store is read', async (range, flag) => {
    const config = writeCliConfig(makeTempDir(), 'http://127.0.0.1:9/api');
    const result = await runCliInProcess(['replay', '--config', config, '--sink', 'out', ...range]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`${flag} (`);
    expect(result.stderr).toContain('must come after --since');
    expect(result.stdout).toBe('');
  });

  it('an empty CHANGEFEED_CONFIG names no file: the configuration itself is what is reported', async () => {
    // runCliInProcess sets CHANGEFEED_CONFIG to ''.
    const result = await runCliInProcess(['status']);
    expect(result.status).toBe(2);
    expect(result.stderr).not.toContain('EISDIR');
    expect(result.stderr).toContain('sinks: required setting is missing');
  });

  it.each([
    ['mysql://db/changefeed', 'must start with sqlite: or postgres://'],
    ['sqlite:', 'names no file'],
  ])('a store.url of %s is invalid configuration, refused with exit 2', async (url, problem) => {
    const config = writeCliConfig(makeTempDir(), 'http://127.0.0.1:9/api', { extra: [`store: { url: "${url}" }`] });
    const result = await runCliInProcess(['status', '--config', config]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('invalid configuration');
    expect(result.stderr).toContain(problem);
  });

  it('replay --since beyond the range of a date is refused with exit 2', async () => {
    const result = await runCliInProcess(['replay', '--sink', 'out', '--since', '99999999999d']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("option '--since <time>' argument '99999999999d' is invalid");
  });

  it('replay --since and --until take ages: the command goes on to the store', async () => {
    const config = writeCliConfig(makeTempDir(), 'http://127.0.0.1:9/api');
    const result = await runCliInProcess([
      'replay',
      '--config',
      config,
      '--sink',
      'out',
      '--since',
      '7d',
      '--until',
      '30m',
    ]);
    // No store was ever made there: the times were taken, and the command stops at the store.
    expect(result.stderr).toContain('STORE_MISSING');
    expect(result.status).toBe(1);
  });

  it.each([
    ['receive', '--port', '0'],
    ['simulate', '--port', '0'],
  ])('%s reads CHANGEFEED_LOG_LEVEL from the environment main is given', async (...args) => {
    const stopped = AbortSignal.abort();
    const result = await runCliInProcess(args, { CHANGEFEED_LOG_LEVEL: 'verbose' }, stopped);
    expect(result.stderr).toContain('CHANGEFEED_LOG_LEVEL=verbose is not a log level');
    expect(result.stdout).toBe(''); // refused before the port was bound
    expect(result.status).toBe(2);
  });
});
