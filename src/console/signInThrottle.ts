/** Failed sign-ins are counted in fixed windows of this length. */
export const SIGN_IN_WINDOW_MS = 15 * 60_000;
/** Failures one client address may have in a window before its sign-ins wait for the next. */
export const FAILURES_PER_ADDRESS = 10;
/** Failures from every address together in a window: what bounds a guesser with many addresses. */
export const FAILURES_IN_ALL = 600;
/** Addresses remembered at once; past it the oldest is forgotten (the bound in all still holds). */
const ADDRESSES_KEPT = 10_000;

interface FailureWindow {
  start: number;
  failures: number;
}

/**
 * A bound on guessing console tokens: after FAILURES_PER_ADDRESS wrong tokens from one address,
 * or FAILURES_IN_ALL from all of them, in a window, sign-ins are refused (429, with Retry-After)
 * until the window ends, the right token too, so the answer tells a guesser nothing. Sessions
 * already signed in are not touched. Behind a proxy every client has the proxy's address.
 */
export class SignInThrottle {
  private readonly byAddress = new Map<string, FailureWindow>();
  private all: FailureWindow = { start: Number.NEGATIVE_INFINITY, failures: 0 };

  /** How long `address` must wait before its next sign-in is read (ms); 0 when it may try now. */
  waitMs(address: string, now: number): number {
    const own = this.current(this.byAddress.get(address), now);
    const all = this.current(this.all, now);
    return Math.max(
      own && own.failures >= FAILURES_PER_ADDRESS ? own.start + SIGN_IN_WINDOW_MS - now : 0,
      all && all.failures >= FAILURES_IN_ALL ? all.start + SIGN_IN_WINDOW_MS - now : 0,
    );
  }

  /** A wrong token from `address`. */
  failed(address: string, now: number): void {
    const own = this.current(this.byAddress.get(address), now) ?? { start: now, failures: 0 };
    own.failures += 1;
    // Re-inserted, so the map's order is the order of last failure and the first key the stalest.
    this.byAddress.delete(address);
    this.byAddress.set(address, own);
    if (this.byAddress.size > ADDRESSES_KEPT) this.byAddress.delete(this.byAddress.keys().next().value as string);
    this.all = this.current(this.all, now) ?? { start: now, failures: 0 };
    this.all.failures += 1;
  }

  /** A right token from `address`: its own failures are forgotten. */
  succeeded(address: string): void {
    this.byAddress.delete(address);
  }

  private current(window: FailureWindow | undefined, now: number): FailureWindow | undefined {
    return window && now >= window.start && now < window.start + SIGN_IN_WINDOW_MS ? window : undefined;
  }
}
