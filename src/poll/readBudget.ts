import { z } from 'zod';
import type { Clock } from '../clock.js';
import { AbortedError } from '../errors.js';
import type { RequestGate, RequestPriority } from '../api/serviceClient.js';
import type { ResponseMeta } from '../api/responseHeaders.js';
import { WakeableSleep } from './wakeableSleep.js';

export const budgetConfigSchema = z
  .object({
    readsPerHour: z
      .number()
      .int()
      .min(1)
      .default(1000)
      .describe(
        "Cap on GET requests per hour for this key (spec: 1,000). The server's RateLimit-Limit wins when lower.",
      ),
    reserve: z
      .number()
      .min(0)
      .max(0.9)
      .default(0.1)
      .describe('Share of the bucket left unused for other clients of the same key.'),
    retryAfterFallbackSeconds: z
      .number()
      .int()
      .min(1)
      .max(3600)
      .default(60)
      .describe(
        'Pause after a 429 that carries no usable wait: Retry-After missing, 0, in the past or not a number or ' +
          'date, and RateLimit-Reset missing or 0.',
      ),
    maxServerPauseSeconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(3600)
      .describe(
        'Longest pause a Retry-After or RateLimit-Reset header can impose; longer values are ' +
          "clamped to it (the bucket's window is an hour).",
      ),
  })
  .strict();

export type BudgetConfig = z.infer<typeof budgetConfigSchema>;

const PRIORITY_RANK: Record<RequestPriority, number> = { identity_provider: 0, poll: 1, discovery: 2, backfill: 3 };
const HOUR_MS = 3_600_000;

interface Waiter {
  priority: RequestPriority;
  order: number;
  resolve: () => void;
  reject: (error: Error) => void;
}

/**
 * Paces every GET of one API key (docs/scheduling.md, "The governor"). Requests leave one at a
 * time, spaced so that what the server says is left (less the reserve) lasts until RateLimit-Reset,
 * never closer than the hourly cap allows, except reads the window could not otherwise spend
 * before it resets. After a 429 nothing leaves until Retry-After. Waiters are served by priority.
 */
export class ReadBudget implements RequestGate {
  private readonly waiters: Waiter[] = [];
  private order = 0;
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private blockedUntil = 0;
  private serverLimit: number | undefined;
  private serverRemaining: number | undefined;
  private resetAt: number | undefined;
  private sentSinceSync = 0;
  private sent = 0;
  /**
   * The end (RateLimit-Reset) of the server window whose unused reads were spent last, and how
   * many of them are left: its first answer's count, which later answers can lower, never raise.
   */
  private surplusWindowEnd = Number.NEGATIVE_INFINITY;
  private surplusLeft = 0;
  /**
   * When the next request may leave, as announced after the last request or answer: what a poll
   * loop that slept for it planned with. The pace's formula moves earlier as the reset nears, so a
   * request that asks at this moment is on time, not late since the moved slot.
   */
  private announcedAt = Number.NEGATIVE_INFINITY;
  private pumping = false;
  /** Woken when a response changes what is known, so a long wait is re-evaluated at once. */
  private readonly wake: WakeableSleep;

  constructor(
    private readonly config: BudgetConfig,
    private readonly clock: Clock,
  ) {
    this.wake = new WakeableSleep(clock);
  }

  acquire(priority: RequestPriority, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new AbortedError('request cancelled while waiting for the read budget'));
        return;
      }
      const onAbort = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) {
          this.waiters.splice(i, 1);
          reject(new AbortedError('request cancelled while waiting for the read budget'));
        }
      };
      // The signal outlives many requests: the listener must go once the request is granted.
      const waiter: Waiter = {
        priority,
        order: this.order++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      // A pump that failed fails the requests waiting on it, at their own launch sites.
      this.pump().catch((error: unknown) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        for (const w of this.waiters.splice(0)) w.reject(failure);
      });
    });
  }

  observe(meta: ResponseMeta): void {
    if (meta.limit !== undefined) this.serverLimit = meta.limit;
    if (meta.remaining !== undefined) {
      this.serverRemaining = meta.remaining;
      this.sentSinceSync = 0;
    }
    const cap = this.config.maxServerPauseSeconds;
    const resetSeconds = meta.resetSeconds === undefined ? undefined : Math.min(meta.resetSeconds, cap);
    if (resetSeconds !== undefined) this.resetAt = meta.receivedAt + resetSeconds * 1000;
    if (meta.status === 429) {
      // A 429 says the bucket is empty, so a wait of 0 (Retry-After: 0 or a past date, a reset of
      // 0) contradicts it: taken at its word it would spend a read a slot on a bucket known empty.
      const seconds = Math.min(
        positive(meta.retryAfterSeconds) ?? positive(resetSeconds) ?? this.config.retryAfterFallbackSeconds,
        cap,
      );
      this.blockedUntil = Math.max(this.blockedUntil, meta.receivedAt + seconds * 1000);
    }
    this.announcedAt = this.earliestSendAt(meta.receivedAt);
    this.wake.wake();
  }

  /** Requests waiting for their turn (a poll loop leaves the slot to them rather than add one). */
  waiting(): number {
    return this.waiters.length;
  }

  /** Requests waiting whose priority is `priority` or higher. */
  waitingAtLeast(priority: RequestPriority): number {
    return this.waiters.filter((w) => PRIORITY_RANK[w.priority] <= PRIORITY_RANK[priority]).length;
  }

  /**
   * Requests per hour this daemon allows itself: min(cap, server limit) less the reserve. The
   * pace (`steadyIntervalMs`) runs one read an hour under it, so that no rolling hour holds more.
   */
  allowancePerHour(): number {
    const limit = Math.min(this.config.readsPerHour, this.serverLimit ?? this.config.readsPerHour);
    return Math.max(1, Math.floor(limit * (1 - this.config.reserve)));
  }

  snapshot() {
    return {
      allowancePerHour: this.allowancePerHour(),
      serverLimit: this.serverLimit,
      serverRemaining: this.serverRemaining,
      resetAt: this.resetAt,
      blockedUntil: this.blockedUntil,
      intervalMs: this.intervalMs(this.clock.now()),
      sent: this.sent,
    };
  }

  /**
   * The pace without a server window: an hour / (allowance - 1). The grid lets a request leave up
   * to one interval after the slot it counts as sent at, and counted sends are at least one
   * interval apart, so n sends in a rolling hour have (n - 1) * interval < HOUR + interval: n is at
   * most HOUR / interval + 1, the allowance (GCRA: this emission interval, a tolerance of one). An
   * allowance of 1 paces at an hour and gives no credit for lateness (see `pump`).
   */
  private steadyIntervalMs(): number {
    return HOUR_MS / Math.max(1, this.allowancePerHour() - 1);
  }

  /** Milliseconds to leave between two requests at time `now`. */
  intervalMs(now: number): number {
    const steady = this.steadyIntervalMs();
    const usable = this.usableUntilReset(now);
    if (usable === undefined || this.resetAt === undefined) return steady;
    if (usable <= 0) return Math.max(steady, this.resetAt - now);
    return Math.max(steady, (this.resetAt - now) / usable);
  }

  /**
   * When the next request may leave, considering pace, the server's window and any 429 pause; a
   * request leaves without waiting its pace slot while the window holds unspent reads
   * (`surplusReads`), such as those of a replica that died holding this key.
   */
  earliestSendAt(now: number): number {
    const usable = this.usableUntilReset(now);
    const slot = this.lastSentAt + this.intervalMs(now);
    const paced =
      usable !== undefined && usable <= 0 && this.resetAt !== undefined
        ? this.resetAt
        : this.surplusReads(now) >= 1
          ? Math.min(now, slot)
          : slot;
    return Math.max(paced, this.blockedUntil);
  }

  /**
   * Whole reads the server's window (RateLimit-Remaining less the reserve) holds beyond what a
   * pace of the full allowance (an hour / allowance, not the steady pace one under it) spends until
   * RateLimit-Reset; 0 when the window is unknown. A window used at the pace has none, so this
   * only spends what was left unused, never runs ahead of the hourly cap; measured against the
   * steady pace instead, a fresh window of the allowance would show at once the one read that pace
   * leaves unused and spend it: the rolling hour's read too many again. A Remaining above the
   * allowance counts as the allowance.
   */
  private unspentReads(now: number): number {
    const usable = this.usableUntilReset(now);
    if (usable === undefined || this.resetAt === undefined) return 0;
    const allowance = this.allowancePerHour();
    const steadyMs = HOUR_MS / allowance;
    return Math.max(0, Math.floor(Math.min(usable, allowance) - (this.resetAt - now) / steadyMs));
  }

  /**
   * Unused reads that may leave now: each server window's once, or answers that do not count down
   * (a proxy's cached answer) would show the same unused reads after every request. A window is a
   * later one only if it starts (an hour before its reset) at or after the end of the one spent last.
   */
  private surplusReads(now: number): number {
    const unspent = this.unspentReads(now);
    if (unspent < 1 || this.resetAt === undefined) return 0;
    return this.resetAt - HOUR_MS >= this.surplusWindowEnd ? unspent : Math.min(unspent, this.surplusLeft);
  }

  /** One unused read spent (surplusReads was at least 1): it opens its window's count if new. */
  private spendSurplus(now: number): void {
    if (this.resetAt !== undefined && this.resetAt - HOUR_MS >= this.surplusWindowEnd) {
      this.surplusWindowEnd = this.resetAt;
      this.surplusLeft = this.unspentReads(now);
    }
    this.surplusLeft--;
  }

  /** Requests left for us in the server's current window, or undefined when the window is unknown or over. */
  private usableUntilReset(now: number): number | undefined {
    if (this.serverRemaining === undefined || this.resetAt === undefined || this.resetAt <= now) return undefined;
    const reserved = Math.ceil((this.serverLimit ?? this.config.readsPerHour) * this.config.reserve);
    return this.serverRemaining - this.sentSinceSync - reserved;
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      // The slot the pump last slept for: the pace's formula moves as time passes, so the moment a
      // slot came is the one planned before the sleep.
      let sleptUntil = Number.NEGATIVE_INFINITY;
      while (this.waiters.length > 0) {
        const now = this.clock.now();
        const sendAt = this.earliestSendAt(now);
        if (sendAt > now) {
          sleptUntil = sendAt;
          await this.wake.sleep(sendAt - now);
          continue;
        }
        this.waiters.sort((a, b) => PRIORITY_RANK[a.priority] - PRIORITY_RANK[b.priority] || a.order - b.order);
        const next = this.waiters.shift();
        if (!next) break;
        if (now < this.lastSentAt + this.intervalMs(now)) this.spendSurplus(now);
        // The pace keeps its grid: a request that leaves late because the process was busy counts
        // as sent when its slot came (the one announced or slept for, if later than the moved
        // formula's). A gap over one steady interval is idleness and earns nothing: the rolling-hour
        // bound (`steadyIntervalMs`) holds only for a credit under the steady slot, and near a
        // window's end the interval is longer, so a credit under it followed by the steady pace
        // would put one read more in the hour. An allowance of 1 gets no credit (no pace runs under it).
        const dueAt = Math.min(now, Math.max(sendAt, sleptUntil, this.announcedAt));
        const credit = this.allowancePerHour() >= 2 && now - dueAt < this.steadyIntervalMs();
        this.lastSentAt = credit ? dueAt : now;
        sleptUntil = Number.NEGATIVE_INFINITY;
        this.sentSinceSync++;
        this.sent++;
        this.announcedAt = this.earliestSendAt(now);
        next.resolve();
      }
    } finally {
      this.pumping = false;
    }
  }
}

function positive(seconds: number | undefined): number | undefined {
  return seconds !== undefined && seconds > 0 ? seconds : undefined;
}
