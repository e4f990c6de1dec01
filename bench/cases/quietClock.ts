import { channel } from 'node:diagnostics_channel';
import type { Clock } from '../../src/clock.js';
import type { ManualClock } from '../../test/support/manualClock.js';

/**
 * Drives a ManualClock shared by the simulator and the daemon as a discrete-event simulation:
 * time moves to the next sleeper's wake-up only when the process is quiet, that is when no HTTP
 * request is in flight (undici's diagnostics channels: from `request:create` to
 * `request:trailers` or `request:error`) other than those whose answer the simulator holds back
 * for its latency, the caller's `busy()` says nothing else is under way
 * (a pending delivery being written), and a few turns of the event loop started nothing new.
 *
 * Unlike a wall-clock scale (or a clock that jumps after a few ms of real idleness), nothing here
 * depends on how fast the machine is: a request takes no virtual time however long it takes in
 * real time, so the figures do not move with CPU load, only the run time does.
 */
/** Real time without progress after which the run is declared stuck. */
const STALL_MS = 120_000;

export class QuietClockDriver {
  private inFlight = 0;
  /** Requests whose answer the simulator holds back on the clock (its latency): they wait for time. */
  private held = 0;
  /** Counts every request started or finished: a quiet check must see it unchanged. */
  private activity = 0;
  private wakeUp: (() => void) | undefined;
  private readonly onCreate = (): void => {
    this.inFlight++;
    this.activity++;
  };
  private readonly onDone = (): void => {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.activity++;
    this.wakeUp?.();
  };

  constructor(private readonly clock: ManualClock) {
    channel('undici:request:create').subscribe(this.onCreate);
    channel('undici:request:trailers').subscribe(this.onDone);
    channel('undici:request:error').subscribe(this.onDone);
  }

  /**
   * The clock to give the simulator: the same ManualClock, except that a response it holds back
   * for its latency does not count as in flight (it waits for virtual time, so time may move).
   */
  serviceClock(): Clock {
    return {
      now: () => this.clock.now(),
      sleep: async (ms, signal) => {
        this.held++;
        try {
          await this.clock.sleep(ms, signal);
        } finally {
          this.held--;
        }
      },
    };
  }

  close(): void {
    channel('undici:request:create').unsubscribe(this.onCreate);
    channel('undici:request:trailers').unsubscribe(this.onDone);
    channel('undici:request:error').unsubscribe(this.onDone);
  }

  /**
   * Runs until virtual time reaches `until`. Before every step `onQuiet(now)` sees the settled
   * state (what the sinks hold now was delivered at `now`).
   */
  async runUntil(until: number, busy: () => boolean | Promise<boolean>, onQuiet: (now: number) => void): Promise<void> {
    for (;;) {
      await this.settle(busy);
      onQuiet(this.clock.now());
      const next = this.clock.nextWakeAt();
      if (this.clock.now() >= until) return;
      await this.clock.advanceTo(next === undefined ? until : Math.min(next, until));
    }
  }

  /** Waits until nothing is in flight and nothing is due now; sleepers due now are woken meanwhile. */
  private async settle(busy: () => boolean | Promise<boolean>): Promise<void> {
    let waitingSince = Date.now();
    for (;;) {
      const before = this.activity;
      // Wakes sleepers due now (the simulator holds each response for its latency) and lets
      // promise chains and immediates run, without moving time.
      await this.clock.advanceTo(this.clock.now());
      if (this.inFlight > this.held || (await busy())) {
        if (this.activity !== before) waitingSince = Date.now();
        // A sink that waits for virtual time (a retry backoff) would wait here for ever.
        if (Date.now() - waitingSince > STALL_MS)
          throw new Error(`nothing finished for ${STALL_MS / 1000} s of real time: a request or a delivery is stuck`);
        await this.ioTurn();
        continue;
      }
      const next = this.clock.nextWakeAt();
      if (this.activity === before && (next === undefined || next > this.clock.now())) return;
    }
  }

  /** Gives I/O (sockets, the file sink's writes) a moment: until a request finishes, or 1 ms. */
  private ioTurn(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, 1);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = undefined;
        done();
      };
    });
  }
}
