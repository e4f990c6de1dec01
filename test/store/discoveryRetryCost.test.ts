import { describe, expect, it } from 'vitest';
import { ApiMalformedResponseError, ApiProblemError } from '../../src/api/apiErrors.js';
import { parseProblemDetails } from '../../src/api/problemDetails.js';
import { PollLoop } from '../../src/poll/pollLoop.js';
import { watchConfigSchema } from '../../src/poll/watchConfig.js';
import { SqliteStoreBackend } from '../../src/store/sqlite/sqliteStoreBackend.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import { ManualClock } from '../support/manualClock.js';
import { noopLogger } from '../support/noopLogger.js';
import { makeTempDir } from '../support/tempDir.js';

const HOUR = 3_600_000;
/** 12:00:00 UTC: the default cron (every 15 minutes) runs at 12:15, 12:30, ... */
const NOON = Date.parse('2026-01-05T12:00:00Z');
/** What one failing run of a big tenant's discovery reads before its last page fails: 51 pages of careers, 51 of skills. */
const PAGES_PER_RUN = 102;

/**
 * A poll loop whose discovery fails every time with `error`, run for `hours` of a ManualClock.
 * Returns the runs started in each virtual hour.
 */
async function failingDiscovery(error: () => Error, hours: number): Promise<number[]> {
  const backend = new SqliteStoreBackend({ stateDir: makeTempDir(), store: storeConfigSchema.parse({}) });
  try {
    const store = await backend.tenantStore('t');
    const clock = new ManualClock(NOON);
    const runs: number[] = Array.from({ length: hours }, () => 0);
    const loop = new PollLoop({
      poller: { poll: () => Promise.reject(new Error('no log is watched')) },
      registry: {
        discoveryEnabled: true,
        discoveredLists: 'career,skill',
        lastDiscovery: () => Promise.resolve(undefined),
        discover: () => {
          const hour = Math.floor((clock.now() - NOON) / HOUR);
          if (hour < hours) runs[hour]! += 1;
          return Promise.reject(error());
        },
      },
      store,
      clock,
      watch: watchConfigSchema.parse({ careers: { discover: true }, skills: { discover: true } }),
      logger: noopLogger,
    });
    loop.start();
    const end = NOON + hours * HOUR;
    while (clock.now() < end) {
      for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
      const next = clock.nextWakeAt();
      await clock.advanceTo(next === undefined ? end : Math.min(next, end));
    }
    await loop.stop();
    return runs;
  } finally {
    await backend.close();
  }
}

const unavailable = (): Error =>
  new ApiMalformedResponseError('list response of GET /api/v1/skills has no string "id" at data[3]', '/api/v1/skills');
const rejected = (): Error =>
  new ApiProblemError({
    code: 'API_INVALID_CREDENTIAL',
    message: 'credential rejected by the service (401); check CHANGEFEED_API_KEY',
    path: '/api/v1/careers',
    status: 401,
    problem: parseProblemDetails(401, '{"title":"Unauthorized","status":401}'),
  });

describe('a discovery that fails every time', () => {
  it('with a transient failure: tried again soon, then no more often than its cron schedule', async () => {
    const runs = await failingDiscovery(unavailable, 4);
    // Tried again before the first cron time (12:15): a discovery that timed out once does not
    // leave the tenant unpolled. The retries are a few (about 9 more than the cron's 4 runs), not
    // a run every 2.5 minutes for as long as it fails: 24 to 37 runs an hour were seen, up to
    // 3,700 reads an hour at PAGES_PER_RUN against a key's 900.
    expect(runs[0]).toBeGreaterThan(5);
    expect(runs[0]).toBeLessThanOrEqual(20);
    // After the first hour, the cron's 4 runs an hour (what the scheduler leaves discovery of the
    // key's reads), and seldom one more: the backoff's ceiling is by then hours.
    for (const hour of runs.slice(1)) expect(hour * PAGES_PER_RUN).toBeLessThanOrEqual(6 * PAGES_PER_RUN);
    expect(runs.slice(1).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(14);
  });

  it('refused for good (401): tried again at the cron time, not on the backoff', async () => {
    const runs = await failingDiscovery(rejected, 2);
    // The cron's 4 runs an hour (12:00 at start, then every 15 minutes); 37 in the first hour were seen.
    for (const hour of runs) expect(hour).toBeLessThanOrEqual(5);
  });
});
