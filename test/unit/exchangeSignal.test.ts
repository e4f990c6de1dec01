import { EventEmitter, getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { exchangeSignal } from '../../src/api/exchangeSignal.js';
import { abortControllersBuilt } from '../support/abortControllersBuilt.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('exchangeSignal', () => {
  it('aborts with a TimeoutError once the time limit passes', () => {
    vi.useFakeTimers();
    const { signal } = exchangeSignal(undefined, 15_000);
    vi.advanceTimersByTime(14_999);
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).name).toBe('TimeoutError');
  });

  it("aborts with the caller's reason, whether the caller aborts before or during the exchange", () => {
    const caller = new AbortController();
    const during = exchangeSignal(caller.signal, 15_000);
    caller.abort(new Error('tenant stopping'));
    expect((during.signal.reason as Error).message).toBe('tenant stopping');
    const before = exchangeSignal(caller.signal, 15_000);
    expect((before.signal.reason as Error).message).toBe('tenant stopping');
    during.clear();
    before.clear();
  });

  // An AbortController per request was about 1% of a 2,000-tenant daemon's CPU and 750 bytes per
  // request in flight; undici takes an EventEmitter as a request's signal as well.
  it('builds no AbortController per exchange: undici gets an EventEmitter', async () => {
    const built = await abortControllersBuilt(() => {
      const exchange = exchangeSignal(undefined, 15_000);
      expect(exchange.signal).toBeInstanceOf(EventEmitter);
      exchange.clear();
    });
    expect(built).toBe(0);
  });

  // AbortSignal.timeout's timer outlived each request by the whole limit: 19,000 timers and
  // signals alive at once at 5,000 tenants.
  it('leaves no timer and no listener on the caller once cleared', () => {
    vi.useFakeTimers();
    const caller = new AbortController();
    for (let i = 0; i < 25; i++) exchangeSignal(caller.signal, 15_000).clear();
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });
});
