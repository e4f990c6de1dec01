import { describe, expect, it } from 'vitest';
import { buildStatusReport, formatStatusReport } from '../../src/cli/statusReport.js';
import { BUDGET_META_KEY } from '../../src/poll/pollRecorder.js';
import { storePath } from '../../src/store/sqlite/database.js';
import { openSqliteStoreFile } from '../support/sqliteStoreFile.js';
import { makeTempDir } from '../support/tempDir.js';

const NOW = Date.UTC(2026, 10, 22, 12);

async function statusWithBudget(recorded: string) {
  const store = openSqliteStoreFile(storePath(makeTempDir()));
  try {
    await store.setMeta(BUDGET_META_KEY, recorded);
    return await buildStatusReport(store, NOW);
  } finally {
    await store.close();
  }
}

describe('the budget in changefeed status', () => {
  it.each([
    ['cut short', '{"at": 17'],
    ['without its time', JSON.stringify({ allowancePerHour: 250, blockedUntil: 0 })],
  ])('a budget record %s reads as not recorded, as the console shows it, instead of failing status', async (_, raw) => {
    const report = await statusWithBudget(raw);
    expect(report.budget).toBeNull();
    expect(formatStatusReport(report)).toMatch(/^budget: not recorded yet/m);
  });

  it('shows the recorded budget in dates, and a 429 pause only while it lasted past the record', async () => {
    const at = NOW - 10_000;
    const report = await statusWithBudget(
      JSON.stringify({
        allowancePerHour: 250,
        serverRemaining: 40,
        resetAt: at + 60_000,
        blockedUntil: at,
        at,
        pollBudgetPerHour: 199.6,
      }),
    );
    expect(report.budget).toEqual({
      at: new Date(at).toISOString(),
      allowancePerHour: 250,
      serverRemaining: 40,
      resetAt: new Date(at + 60_000).toISOString(),
      pollBudgetPerHour: 200,
      blockedUntil: null,
    });
  });
});
