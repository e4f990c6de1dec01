/** What the RateLimit-* headers report (spec 8 rule 1). */
export interface BucketState {
  /** The hourly allowance. */
  readonly limit: number;
  /** Reads left in the current window. */
  readonly remaining: number;
  /** Whole seconds until the window resets (rounded up, so never 0 inside a window). */
  readonly resetSeconds: number;
}

export interface BucketDecision extends BucketState {
  readonly allowed: boolean;
}

const WINDOW_MS = 3_600_000;

interface Window {
  start: number;
  used: number;
}

/**
 * The reads bucket of each key: a fixed one-hour window that opens at the key's first counted
 * request after the previous window ended. A fixed window (not a sliding one) is the harsher
 * reading of "1,000 requests per hour" for a client: spending the allowance early means waiting
 * for the full reset, which is the case the daemon's budget must handle.
 */
export class ReadBuckets {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly limit: number) {}

  /** Counts one read if the window has room; a refused read is not counted. */
  take(key: string, now: number): BucketDecision {
    const window = this.current(key, now);
    const allowed = window.used < this.limit;
    if (allowed) window.used++;
    return { allowed, ...this.describe(window, now) };
  }

  /** Spends `count` reads as another client of the same key would. */
  spend(key: string, count: number, now: number): BucketState {
    const window = this.current(key, now);
    window.used += count;
    return this.describe(window, now);
  }

  /** The state without counting anything (for responses that are not reads). */
  peek(key: string | null, now: number): BucketState {
    const window = key === null ? undefined : this.windows.get(key);
    if (!window || now >= window.start + WINDOW_MS) {
      return { limit: this.limit, remaining: this.limit, resetSeconds: WINDOW_MS / 1000 };
    }
    return this.describe(window, now);
  }

  private current(key: string, now: number): Window {
    let window = this.windows.get(key);
    if (!window || now >= window.start + WINDOW_MS) {
      window = { start: now, used: 0 };
      this.windows.set(key, window);
    }
    return window;
  }

  private describe(window: Window, now: number): BucketState {
    return {
      limit: this.limit,
      remaining: Math.max(0, this.limit - window.used),
      resetSeconds: Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000)),
    };
  }
}
