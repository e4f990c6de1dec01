import { statSync, watch, type FSWatcher } from 'node:fs';
import { resolve } from 'node:path';
import { systemClock, type Clock } from '../clock.js';
import { isAbortError } from '../errors.js';
import { canonicalJson, diffTenants, tenantsDiffered, type TenantsDiff } from './diffTenants.js';
import type { Tenant, TenantProblem, TenantSet } from './tenant.js';

/** What the watcher tells its owner after a read that changed the tenants or their problems. */
export interface TenantsReport<C> {
  /** The tenants that run now, sorted by name. */
  readonly tenants: readonly Tenant<C>[];
  /** From the tenants reported before (all added on the first report). */
  readonly diff: TenantsDiff;
  /** Every current problem; an empty list after a report with problems means they were fixed. */
  readonly problems: readonly TenantProblem[];
}

export interface TenantsWatcherOptions<C> {
  /** `tenants.dir`. */
  readonly dir: string;
  /**
   * Reads the tenants, given those running now (`readTenants` bound to the main config and settled
   * against the store's tenant records). A rejection is reported to `onError`; the tenants stay.
   */
  readonly load: (previous: readonly Tenant<C>[]) => Promise<TenantSet<C>>;
  /** Called after the first read and after every read that changed the tenants or the problems. */
  readonly onReport: (report: TenantsReport<C>) => void;
  /** A read that failed (the store's records, not a bad file); the tenants stay as they were. */
  readonly onError?: (error: unknown) => void;
  /** `tenants.rescanSeconds` in ms: the directory is read this often whatever the notifications say. */
  readonly rescanMs: number;
  /** Quiet time after a notification before reading, so a burst of writes is read once. Default 200 ms. */
  readonly debounceMs?: number;
  /** Use file-system notifications (fs.watch) besides the rescan. Default true. */
  readonly fileEvents?: boolean;
  readonly clock?: Clock;
}

/** A burst that never goes quiet is still read after this many debounce periods. */
const MAX_DEBOUNCE_ROUNDS = 10;

/**
 * Keeps the tenants of `tenants.dir` up to date: reads them on a file-system notification (after
 * the burst goes quiet) and every `rescanMs` in any case, because notifications are missed on some
 * mounts (a Kubernetes ConfigMap swaps a `..data` symlink; a directory replaced as a whole leaves
 * the old watch blind, so the watch is re-armed when the directory was replaced).
 *
 * A directory that is missing or unreadable is a problem, not an empty directory: every running
 * tenant keeps running; only a file gone from a readable directory stops its tenant (and not
 * when the directory holds no file at all while the store records tenants: `load` refuses it).
 *
 * States: created -> active (start) -> stopping -> stopped (stop, idempotent, awaits the loop).
 */
export class TenantsWatcher<C> {
  private state: 'created' | 'active' | 'stopping' | 'stopped' = 'created';
  private current: TenantSet<C> = { tenants: [], problems: [] };
  private readonly stopper = new AbortController();
  private readonly clock: Clock;
  private readonly debounceMs: number;
  private fsWatcher: FSWatcher | undefined;
  private watchedIdentity: string | undefined;
  private dirty = false;
  /** Whether a read succeeded yet: the first one is reported whatever it found. */
  private reported = false;
  private wake: AbortController | undefined;
  private loopDone: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;

  constructor(private readonly options: TenantsWatcherOptions<C>) {
    this.clock = options.clock ?? systemClock;
    this.debounceMs = options.debounceMs ?? 200;
  }

  /**
   * Reads the tenants once (reported like every later read), then keeps watching. A first read
   * that fails is reported to `onError`, and the next read is the first report.
   */
  async start(): Promise<TenantSet<C>> {
    if (this.state !== 'created') throw new Error(`TenantsWatcher.start() called when ${this.state}`);
    this.state = 'active';
    try {
      await this.read();
    } catch (error) {
      this.options.onError?.(error);
    }
    this.loopDone = this.loop();
    return this.current;
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.state = 'stopping';
      this.stopper.abort();
      this.unwatch();
      await this.loopDone;
      this.state = 'stopped';
    })();
    return this.stopped;
  }

  private async loop(): Promise<void> {
    while (this.state === 'active') {
      try {
        if (!this.dirty) await this.waitForChangeOrRescan();
        for (let round = 0; this.dirty && round < MAX_DEBOUNCE_ROUNDS; round++) {
          this.dirty = false;
          await this.clock.sleep(this.debounceMs, this.stopper.signal);
        }
        this.dirty = false;
        await this.read();
      } catch (error) {
        if (isAbortError(error) && this.stopper.signal.aborted) return;
        // Never a hot loop: the next pass waits for a notification or the rescan.
        this.options.onError?.(error);
      }
    }
  }

  /** Resolves on a notification or when the rescan is due; rejects with AbortedError on stop. */
  private async waitForChangeOrRescan(): Promise<void> {
    // One controller per wait, tied to the stopper by a listener removed afterwards: nothing
    // accumulates on the long-lived stop signal however long the daemon runs.
    const wake = new AbortController();
    const onStop = (): void => wake.abort();
    this.stopper.signal.addEventListener('abort', onStop, { once: true });
    this.wake = wake;
    try {
      await this.clock.sleep(this.options.rescanMs, wake.signal);
    } catch (error) {
      if (this.stopper.signal.aborted || !isAbortError(error)) throw error;
      // Woken by a file-system notification.
    } finally {
      this.wake = undefined;
      this.stopper.signal.removeEventListener('abort', onStop);
    }
  }

  private async read(): Promise<void> {
    if (this.state !== 'active') return;
    this.rearm();
    const previous = this.current;
    const next = await this.options.load(previous.tenants);
    if (this.state !== 'active') return;
    const first = !this.reported;
    this.reported = true;
    this.current = next;
    const diff = diffTenants(previous.tenants, next.tenants);
    const problemsChanged = canonicalJson(previous.problems) !== canonicalJson(next.problems);
    if (first || tenantsDiffered(diff) || problemsChanged) {
      this.options.onReport({ tenants: next.tenants, diff, problems: next.problems });
    }
  }

  private readonly onFileEvent = (): void => {
    this.dirty = true;
    this.wake?.abort();
  };

  // Watches the directory now at `dir`: again after it was replaced, not at all while it is missing.
  private rearm(): void {
    if (this.options.fileEvents === false) return;
    const identity = directoryIdentity(this.options.dir);
    if (identity === this.watchedIdentity && this.fsWatcher !== undefined) return;
    this.unwatch();
    if (identity === undefined) return;
    try {
      const watcher = watch(resolve(this.options.dir), { persistent: false }, this.onFileEvent);
      watcher.on('error', () => {
        this.unwatch();
        this.onFileEvent();
      });
      this.fsWatcher = watcher;
      this.watchedIdentity = identity;
    } catch {
      // Unwatchable (no inotify left, an exotic mount): the rescan alone keeps the tenants current.
    }
  }

  private unwatch(): void {
    this.fsWatcher?.close();
    this.fsWatcher = undefined;
    this.watchedIdentity = undefined;
  }
}

function directoryIdentity(dir: string): string | undefined {
  try {
    const stats = statSync(dir);
    return stats.isDirectory() ? `${stats.dev}:${stats.ino}` : undefined;
  } catch {
    return undefined;
  }
}
