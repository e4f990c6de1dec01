import { AbortedError } from '../errors.js';
import { timerDelayMs, type Clock } from '../clock.js';

/**
 * The clock of lease deadlines: it never jumps when the wall clock is set (NTP, an operator, a
 * VM resumed), since a jump forward would drop leases early and a jump back would keep writing on
 * leases that expired. `now` is the process's monotonic time (performance.now, offset to look like
 * epoch milliseconds); `sleep` is a plain timer, which libuv also measures monotonically.
 */
export const monotonicClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new AbortedError());
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(new AbortedError());
      };
      // Lease waits are seconds; timerDelayMs only guards against a NaN or a huge misconfiguration.
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, timerDelayMs(ms));
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
