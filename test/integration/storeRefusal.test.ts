import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { writeCliConfig } from '../support/cliConfig.js';
import { makeTempDir } from '../support/tempDir.js';
import { startTestSimulator } from '../support/testSimulator.js';

async function setup() {
  const simulator = await startTestSimulator({
    seed: 62,
    careers: 2,
    skills: 1,
    // Enough entries that half the store file holds pages in use: cut there, it is damaged.
    eventsPerHour: 360,
    historyHours: 1,
    readsPerHour: 1_000_000,
  });
  const dir = makeTempDir();
  const stateDir = join(dir, 'state');
  const file = writeCliConfig(dir, simulator.url, {
    extra: ['watch: { careers: { discover: true }, skills: { discover: true }, startFrom: "2000-01-01T00:00:00Z" }'],
  });
  const store = join(stateDir, 'changefeed.sqlite');
  return {
    file,
    store,
    stateDir,
    env: { CHANGEFEED_API_KEY: simulator.apiKey },
    run: (...extra: string[]) =>
      runCli(['run', '--config', file, '--once', ...extra], { CHANGEFEED_API_KEY: simulator.apiKey }),
  };
}

// An emptied store file was silently taken as new: everything was delivered again.
describe('a store file that is not one we can trust', () => {
  it.each([
    ['empty', (store: string) => writeFileSync(store, ''), 'is empty (0 bytes)'],
    [
      'not SQLite',
      (store: string) => writeFileSync(store, 'hello, I am a text file, not a database at all'),
      'is not a SQLite database',
    ],
    [
      'another application',
      (store: string) => {
        const db = new Database(store);
        db.exec('CREATE TABLE invoices (id INTEGER)');
        db.close();
      },
      'is a SQLite database of another application',
    ],
  ])(
    'is refused when %s, naming the file',
    async (_name, spoil, problem) => {
      const s = await setup();
      mkdirSync(s.stateDir, { recursive: true });
      spoil(s.store);
      const result = await s.run();
      expect(result.status).toBe(1);
      expect(result.stderr).toContain(`STORE_REFUSED: the store ${s.store} ${problem}`);
      expect(result.stderr).toContain('--reset-store');
    },
    120_000,
  );

  it('is refused when cut short, and --reset-store keeps it aside and starts afresh', async () => {
    const s = await setup();
    const first = await s.run();
    expect(first.status, first.stderr).toBe(0);
    truncateSync(s.store, Math.floor(statSync(s.store).size / 2));
    const refused = await s.run();
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/STORE_REFUSED: the store .* is damaged/);
    const reset = await s.run('--reset-store');
    expect(reset.status, reset.stderr).toBe(0);
    expect(readdirSync(s.stateDir).some((f) => f.startsWith('changefeed.sqlite.reset-'))).toBe(true);
    expect(existsSync(s.store)).toBe(true);
  }, 180_000);
});
