import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { STORE_OPEN_RETRY, StoreOpening, whileStoreRefuses } from '../../src/daemon/storeOpening.js';
import { AbortedError } from '../../src/errors.js';
import { createLogger } from '../../src/observe/createLogger.js';
import { StoreError } from '../../src/store/storeError.js';
import { StoreActivity } from '../../src/store/storeActivity.js';
import type { StoreBackend } from '../../src/store/storeBackend.js';
import { StoreUnavailableError } from '../../src/store/storeHealth.js';
import { noopLogger } from '../support/noopLogger.js';

const LOCATION = 'postgres://<redacted>@db:5432/changefeed';

/** A store backend that only records whether it was closed. */
function fakeBackend(): StoreBackend & { closed: boolean } {
  const backend = {
    location: LOCATION,
    sharedByReplicas: undefined,
    activity: new StoreActivity('postgres'),
    closed: false,
    tenantStore: () => Promise.reject(new Error('not used')),
    tenantRecords: () => {
      throw new Error('not used');
    },
    close: () => {
      backend.closed = true;
      return Promise.resolve();
    },
  };
  return backend;
}

/** Attempts answered one by one by the test: each call of `open` waits for the next `answer`. */
function scriptedOpen() {
  const pending: { resolve: (b: StoreBackend) => void; reject: (e: unknown) => void }[] = [];
  let calls = 0;
  let onCall: (() => void) | undefined;
  return {
    open: () =>
      new Promise<StoreBackend>((resolve, reject) => {
        calls++;
        pending.push({ resolve, reject });
        onCall?.();
      }),
    get calls() {
      return calls;
    },
    /** Resolves once `open` was called `n` times in all. */
    called: (n: number) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (calls >= n) resolve();
        };
        onCall = check;
        check();
      }),
    fail: (error: unknown) => pending.shift()!.reject(error),
    succeed: (backend: StoreBackend) => pending.shift()!.resolve(backend),
  };
}

function collectedLogger() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ level: 'info', destination }), lines };
}

const unreachable = () =>
  new StoreUnavailableError(`PostgreSQL at ${LOCATION} (schema changefeed) is unreachable: connect ECONNREFUSED`);

/** A StoreOpening whose attempts the test answers, on a ManualClock; `random: () => 1` makes every wait its ceiling. */
function scriptedOpening(
  options: { random?: () => number; logger?: ReturnType<typeof collectedLogger>['logger'] } = {},
) {
  const clock = new ManualClock();
  const script = scriptedOpen();
  const opening = new StoreOpening({
    open: script.open,
    clock,
    logger: options.logger ?? collectedLogger().logger,
    location: LOCATION,
    ...(options.random ? { random: options.random } : {}),
  });
  return { clock, script, opening };
}

describe('opening the store at start while the database is down', () => {
  it('retries with growing waits, says why in readiness and the log, and opens once the database answers', async () => {
    const { logger, lines } = collectedLogger();
    // random 1: every wait is its ceiling, so the test knows it.
    const { clock, script, opening } = scriptedOpening({ logger, random: () => 1 });
    expect(opening.problem).toBeUndefined();
    const opened = opening.open();
    await script.called(1);
    script.fail(unreachable());
    await clock.advance(0);
    expect(opening.problem).toBe(
      `PostgreSQL at ${LOCATION} (schema changefeed) is unreachable: connect ECONNREFUSED; retrying in 1 s (after attempt 1)`,
    );
    expect(script.calls).toBe(1);
    await clock.advance(1_000);
    await script.called(2);
    script.fail(unreachable());
    await clock.advance(0);
    expect(opening.problem).toMatch(/retrying in 2 s \(after attempt 2\)$/);
    await clock.advance(1_500);
    expect(opening.problem).toMatch(/retrying in 1 s \(after attempt 2\)$/);
    expect(script.calls).toBe(2);
    await clock.advance(500);
    await script.called(3);
    const backend = fakeBackend();
    script.succeed(backend);
    await expect(opened).resolves.toBe(backend);
    expect(opening.problem).toBeUndefined();
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings.map((l) => [l.attempt, l.retryInMs])).toEqual([
      [1, 1_000],
      [2, 2_000],
    ]);
    expect(warnings[0]!.msg).toBe('the store cannot be opened yet; retrying in 1 s (not ready until it opens)');
    expect(warnings[0]!.err).toMatch(/^STORE_UNAVAILABLE: PostgreSQL at .* is unreachable/);
    expect(lines.at(-1)).toMatchObject({ msg: 'the store answered; opened it', attempts: 3 });
  });

  it('waits at most the policy ceiling between attempts, however long the database stays down', async () => {
    const { clock, script, opening } = scriptedOpening({ random: () => 1 });
    void opening.open().catch(() => undefined);
    for (let attempt = 1; attempt <= 10; attempt++) {
      await script.called(attempt);
      script.fail(unreachable());
      await clock.advance(0);
      const waitS = Math.min(STORE_OPEN_RETRY.maxMs, STORE_OPEN_RETRY.initialMs * 2 ** (attempt - 1)) / 1000;
      expect(opening.problem).toMatch(new RegExp(`retrying in ${waitS} s \\(after attempt ${attempt}\\)$`));
      await clock.advance(waitS * 1000);
    }
    opening.abort();
  });

  it('fails at once, without retrying, on what waiting cannot fix', async () => {
    const { clock, script, opening } = scriptedOpening();
    const opened = opening.open();
    await script.called(1);
    const refused = new StoreError('cannot open the store: database "nope" does not exist; check store.url');
    script.fail(refused);
    await expect(opened).rejects.toBe(refused);
    await clock.advance(60_000);
    expect(script.calls).toBe(1);
  });

  it('stops waiting at once when aborted between attempts', async () => {
    const { clock, script, opening } = scriptedOpening();
    const opened = opening.open();
    await script.called(1);
    script.fail(unreachable());
    await clock.advance(0);
    opening.abort();
    await expect(opened).rejects.toBeInstanceOf(AbortedError);
    await clock.advance(60_000);
    expect(script.calls).toBe(1);
  });

  it('does not wait for an attempt under way when aborted, and closes the store that attempt opens late', async () => {
    const { clock, script, opening } = scriptedOpening();
    const opened = opening.open();
    await script.called(1);
    opening.abort();
    await expect(opened).rejects.toBeInstanceOf(AbortedError);
    const late = fakeBackend();
    script.succeed(late);
    await clock.advance(0);
    expect(late.closed).toBe(true);
  });
});

describe('whileStoreRefuses', () => {
  it('clears the refusal it reported when a later try fails for another reason, which it throws', async () => {
    const clock = new ManualClock();
    const refusals: (string | undefined)[] = [];
    let refused: () => void = () => undefined;
    const firstRefusal = new Promise<void>((resolve) => (refused = resolve));
    const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    const answers: Error[] = [full, new StoreError('sink "out": caFile /etc/ca.pem does not exist')];
    const waiting = whileStoreRefuses({
      attempt: () => Promise.reject(answers.shift() ?? new Error('no more tries')),
      clock,
      logger: noopLogger,
      location: '/var/lib/changefeed/changefeed.sqlite',
      signal: new AbortController().signal,
      onRefusal: (problem) => {
        refusals.push(problem);
        refused();
      },
      random: () => 0,
    });
    const thrown = waiting.catch((error: unknown) => error);
    // The wait begins in the same turn as the refusal is reported.
    await firstRefusal;
    expect(refusals).toEqual([expect.stringMatching(/the disk holding .* is full/)]);
    await clock.advance(STORE_OPEN_RETRY.maxMs);
    expect(await thrown).toMatchObject({ message: expect.stringContaining('caFile') });
    // Left as it was, /readyz named a full disk for as long as the daemon ran, the disk long freed.
    expect(refusals.at(-1)).toBeUndefined();
  });
});

describe('whileStoreRefuses beside others on one stop signal', () => {
  it('waits, one per tenant of a directory on a full disk, without a warning of a leak', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      const clock = new ManualClock();
      const stopping = new AbortController();
      const full = (): Error => Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      let refusals = 0;
      let allRefused: () => void = () => undefined;
      const refused = new Promise<void>((resolve) => (allRefused = resolve));
      // The daemon's tenants of a directory: each start refused once, each waiting on the daemon's one signal.
      const starts = Array.from({ length: 40 }, (_, tenant) => {
        let tries = 0;
        return whileStoreRefuses({
          attempt: () => (tries++ === 0 ? Promise.reject(full()) : Promise.resolve(tenant)),
          clock,
          logger: noopLogger,
          location: '/var/lib/changefeed/changefeed.sqlite',
          signal: stopping.signal,
          onRefusal: (problem) => {
            if (problem !== undefined && ++refusals === 40) allRefused();
          },
          random: () => 0,
        });
      });
      await refused;
      await clock.advance(STORE_OPEN_RETRY.maxMs);
      expect(await Promise.all(starts)).toHaveLength(40);
      // process.emitWarning reports on the next turn.
      await new Promise((resolve) => setImmediate(resolve));
      // Before the fix: "MaxListenersExceededWarning: Possible EventTarget memory leak detected. 11
      // abort listeners added to [AbortSignal]", printed raw beside the daemon's JSON log lines.
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
