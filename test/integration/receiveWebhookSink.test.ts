import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { ManualClock } from '../support/manualClock.js';
import { withVirtualTime } from '../support/virtualTime.js';
import { ROTATED_SECRET, SECRET, storeWithEvents, webhookEngine } from '../support/webhookHarness.js';

/** `changefeed receive` running in this process: its output so far, a wait on it, and its stop. */
interface Receive {
  url: string;
  output(): string;
  /** Resolves once the output satisfies `done`, checked on every write (rejects if the command ends). */
  until(done: (output: string) => boolean): Promise<void>;
  stop(): Promise<number>;
}

const running: Receive[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

async function startReceive(args: string[]): Promise<Receive> {
  const stdout = new PassThrough();
  let text = '';
  const waiters = new Set<() => void>();
  stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    for (const check of waiters) check();
  });
  const stop = new AbortController();
  const exit = main(['receive', '--port', '0', ...args], {
    stdout,
    stderr: new PassThrough(),
    env: { ...process.env, CHANGEFEED_CONFIG: '' },
    signal: stop.signal,
  });
  const until = (done: (output: string) => boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (!done(text)) return;
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      check();
      exit.then(
        (code) => reject(new Error(`receive exited with ${code} before the output expected:\n${text}`)),
        reject,
      );
    });
  await until((out) => out.includes('receiving webhooks at'));
  const url = /receiving webhooks at (\S+)/.exec(text)?.[1] ?? '';
  const receive: Receive = {
    url,
    output: () => text,
    until,
    stop: async () => {
      stop.abort();
      return exit;
    },
  };
  running.push(receive);
  return receive;
}

const verified = (out: string): string[] => out.split('\n').filter((line) => line.startsWith('✓ '));
const rejected = (out: string): string[] => out.split('\n').filter((line) => line.startsWith('✗ '));

describe('the webhook sink against `changefeed receive`, standardwebhooks on both ends', () => {
  it('is verified with the right secret; a wrong one is an endpoint failure that keeps every event pending', async () => {
    const receive = await startReceive(['--secret', SECRET]);
    const clock = new ManualClock();

    const right = await storeWithEvents(6, 3);
    const engine = webhookEngine({ store: right.store, url: receive.url, clock });
    const [report] = await withVirtualTime(clock, engine.drain(clock.now() + 60_000));
    await engine.stop();
    expect(report).toMatchObject({ drained: true, dead: 0 });
    await receive.until((out) => verified(out).length === 6);
    const ids = verified(receive.output()).map((line) => line.split(' ')[1]);
    expect(new Set(ids).size).toBe(6);
    expect(verified(receive.output()).every((line) => line.endsWith('(signature verified)'))).toBe(true);
    expect(rejected(receive.output())).toEqual([]);
    await right.store.close();

    // The receiver verifies with another secret: every request is refused with 401, which says
    // the endpoint's configuration is wrong, not the events.
    const { store } = await storeWithEvents(6, 3);
    const wrong = webhookEngine({ store, url: receive.url, clock, sink: { secret: ROTATED_SECRET } });
    await withVirtualTime(clock, wrong.drain(clock.now() + 10 * 60_000));
    await wrong.stop();
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 6, delivered: 0, dead: 0 });
    expect(await store.deadLetters.list()).toEqual([]);
    const [failing] = await store.sinks.list();
    expect(failing).toMatchObject({ connected: false, circuit: 'open', disabledReason: null });
    expect(failing?.failingSince).toEqual(expect.any(Number));
    expect(failing?.lastError).toMatch(/HTTP 401 answering "webhook signature not verified: .+"; the receiver refused/);
    // The 3 first in flight (one per object), then a probe after 5 s and after 5 min.
    await receive.until((out) => rejected(out).length === 5);
    expect(rejected(receive.output()).every((line) => line.includes('(REJECTED: '))).toBe(true);
    expect(verified(receive.output())).toHaveLength(6);

    // The sink given the receiver's secret (a restart with the fixed config): all of them arrive.
    const fixed = webhookEngine({ store, url: receive.url, clock });
    const [after] = await withVirtualTime(clock, fixed.drain(clock.now() + 60_000));
    await fixed.stop();
    expect(after).toMatchObject({ drained: true, dead: 0 });
    expect(await store.outbox.counts('hook')).toMatchObject({ pending: 0, delivered: 6, dead: 0 });
    expect((await store.sinks.list())[0]).toMatchObject({ failingSince: null, circuit: 'closed' });
    await receive.until((out) => verified(out).length === 12);
    expect(rejected(receive.output())).toHaveLength(5);
    await store.close();
    expect(await receive.stop()).toBe(0);
  });

  it('generates a secret that a sink configured with it signs every event with', async () => {
    const receive = await startReceive([]);
    const secret = /Your webhook signing secret is (whsec_\S+) \(\^C to quit\)/.exec(receive.output())?.[1];
    expect(secret).toMatch(/^whsec_/);
    const clock = new ManualClock();
    const { store } = await storeWithEvents(4, 2);
    const engine = webhookEngine({ store, url: receive.url, clock, sink: { secret } });
    const [report] = await withVirtualTime(clock, engine.drain(clock.now() + 60_000));
    await engine.stop();
    expect(report).toMatchObject({ drained: true, dead: 0 });
    await receive.until((out) => verified(out).length === 4);
    expect(rejected(receive.output())).toEqual([]);
    await store.close();
  });
});
