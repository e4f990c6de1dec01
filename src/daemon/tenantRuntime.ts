import type { Logger } from 'pino';
import { requestIdOf } from '../api/apiErrors.js';
import type { AppConfig } from '../config/appConfigSchema.js';
import type { DrainReport } from '../deliver/deliveryEngine.js';
import { describeError, errorCodeOf, isAbortError } from '../errors.js';
import type { ReadinessCheck } from '../observe/healthServer.js';
import type { SweepSummary } from '../poll/pollLoop.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import { assembleTenant, type DaemonParts, type TenantOptions } from './daemonParts.js';
import { pruneJournalHourly } from './journalPruner.js';
import { readinessChecks } from './readinessChecks.js';
import { pingService } from './serviceConnection.js';

/** A finding of one tenant, named so, since `run --once` reports every tenant's together. */
export type OfTenant<T> = { tenant: string } & T;

export interface OnceReport {
  sweep: Omit<SweepSummary, 'failures'> & { failures: OfTenant<SweepSummary['failures'][number]>[] };
  sinks: OfTenant<DrainReport>[];
  /** Configured ids the service does not know (404): a typo or a deleted object. */
  gone: OfTenant<{ log: string; objectId: string; reason: string }>[];
  ok: boolean;
}

/**
 * One tenant's life in this process: start (store preparation, delivery, polling, pruning), one
 * sweep for `run --once`, readiness, and an idempotent stop that drains in the reverse order.
 */
export class TenantRuntime {
  private readonly parts: DaemonParts;
  /** Every line this runtime logs names its tenant. */
  private readonly logger: Logger;
  private readonly abort = new AbortController();
  private pruning: Promise<void> | undefined;
  private stopped = false;
  private stopping: Promise<void> | undefined;

  constructor(
    readonly tenant: string,
    readonly config: AppConfig,
    store: ChangefeedStore,
    options: TenantOptions,
    /** On a shared store: called before each request to the service and each write to a sink; throws LEASE_LOST once the lease is gone. */
    requestGuard?: (refused?: string) => void,
  ) {
    this.logger = options.logger.child({ tenant });
    this.parts = assembleTenant(
      tenant,
      config,
      store,
      Object.assign({}, options, { logger: this.logger }),
      (error) => this.leaseLost(error),
      requestGuard,
    );
  }

  /** This tenant's journal over HTTP, when feed.enabled. */
  get feed(): DaemonParts['feed'] {
    return this.parts.feed;
  }

  /** Running and polling (for /healthz). */
  get alive(): boolean {
    return !this.stopped && this.parts.pollLoop.state !== 'stopped';
  }

  /** One request to learn the service's clock and check the key before anything is registered. */
  private async ping(): Promise<void> {
    try {
      await pingService(this.parts.client, this.abort.signal);
    } catch (error) {
      // A lease lost while the tenant starts: nothing more is asked or written here.
      if (isAbortError(error) || errorCodeOf(error) === 'LEASE_LOST') throw error;
      this.logger.error(
        { err: describeError(error), requestId: requestIdOf(error) },
        'ping failed; polling will retry',
      );
    }
  }

  async start(): Promise<void> {
    const { store, engine, pollLoop, clock } = this.parts;
    const watched = await this.prepare();
    store.running?.();
    engine.start();
    pollLoop.start();
    this.parts.metrics.attach(this.parts.metricSource);
    this.pruning = pruneJournalHourly({
      store,
      clock,
      logger: this.logger,
      retentionDays: this.config.journal.retentionDays,
      signal: this.abort.signal,
    });
    this.logger.info(
      {
        instanceId: this.config.cluster.instanceId,
        sinks: engine.sinkNames,
        watched,
        store: store.location,
      },
      'tenant running',
    );
  }

  /** `run --once`: one sweep of every watched log, then delivery of everything pending. */
  async runOnce(deliveryTimeoutMs = 60_000): Promise<OnceReport> {
    const { store, engine, pollLoop, registry, clock } = this.parts;
    await this.prepare();
    // Dead letters left by an earlier run were reported then; only new ones fail this run.
    const deadBefore = new Map<string, number>();
    for (const name of engine.sinkNames) deadBefore.set(name, (await store.outbox.counts(name)).dead);
    const sweep = await pollLoop.sweepOnce();
    const sinks = await engine.drain(clock.now() + deliveryTimeoutMs);
    const gone = await registry.configuredGone();
    const ok =
      sweep.failures.length === 0 &&
      gone.length === 0 &&
      sinks.every((s) => s.drained && s.dead <= (deadBefore.get(s.sink) ?? 0));
    const tenant = this.tenant;
    return {
      sweep: { ...sweep, failures: sweep.failures.map((f) => ({ tenant, ...f })) },
      sinks: sinks.map((s) => ({ tenant, ...s })),
      gone: gone.map((g) => ({ tenant, ...g })),
      ok,
    };
  }

  /**
   * Stops polling, lets the deliveries in flight finish for up to `drainMs` (their acks commit
   * under the lease still held) and aborts those left, then closes the sinks and the client.
   * `drainMs: 0` aborts them at once (a lost lease: their acks would be refused), as does
   * `cutShort` during a drain. Idempotent: a second call waits for the first.
   */
  stop(options: { drainMs: number }): Promise<void> {
    if (options.drainMs <= 0) this.cutShort();
    this.stopping ??= this.shutDown(options.drainMs);
    return this.stopping;
  }

  /** Aborts the deliveries in flight now, whether or not a stop drains them. */
  cutShort(): void {
    this.parts.engine.abortWrites();
  }

  private async shutDown(drainMs: number): Promise<void> {
    this.stopped = true;
    this.parts.metrics.detach(this.parts.metricSource);
    this.abort.abort();
    await this.parts.pollLoop.stop();
    if (drainMs > 0)
      this.logger.info({ drainMs }, 'tenant stopping: polling stopped, deliveries in flight finish within drainMs');
    await this.parts.engine.stop({ drainMs });
    await this.pruning;
    // The learned state still waiting for a write (store.deferState), under the lease still held.
    // Not tried against a store known to be away (a stop must not wait out its timeouts); refused
    // (a lost lease, a store away), it is only a refinement lost.
    if (this.parts.store.health.problem === undefined)
      await this.parts.store.flushDeferred().catch((error: unknown) => {
        this.logger.debug({ err: describeError(error) }, 'learned state not recorded while stopping');
      });
    await this.parts.client.close();
    this.parts.feed?.close();
  }

  /**
   * A write of this tenant refused with LEASE_LOST, by its poll loop or a sink worker: another
   * replica may hold the tenant now, so the whole runtime stops here, never one worker alone.
   */
  private leaseLost(error: unknown): void {
    if (this.stopped) return;
    this.logger.warn(
      { err: describeError(error) },
      'a write was refused: this replica no longer holds the lease; the tenant stops here and the new holder carries on',
    );
    this.stop({ drainMs: 0 }).catch((stopError: unknown) =>
      this.logger.error({ err: describeError(stopError) }, 'stopping a tenant whose lease was lost failed'),
    );
  }

  /** What /readyz reports. */
  readiness(): ReadinessCheck[] {
    const { store, credential, pollLoop, serverClock, engine, clock } = this.parts;
    return readinessChecks({
      now: clock.now(),
      store,
      credential: credential.check(),
      pollLoop: pollLoop.state,
      clockProblem: serverClock.problem(),
      sinks: engine.connectionStates(),
      sinkGraceMs: this.config.http.sinkGraceSeconds * 1000,
    });
  }

  /**
   * The store in line with the config (a sink seen for the first time starts from now, or from
   * the journal with `startFrom: journal`; logs an earlier run disabled get another chance), the
   * service's clock learned, configured logs not watched yet registered. Returns how many logs
   * are watched.
   */
  private async prepare(): Promise<number> {
    const { store } = this.parts;
    const { sinks } = this.config;
    const now = this.parts.clock.now();
    const added = await store.sinks.activate(
      sinks.map((s) => ({ name: s.name, type: s.type })),
      now,
    );
    for (const name of added) {
      const fromJournal = sinks.find((s) => s.name === name)?.startFrom === 'journal';
      const queued = fromJournal ? await store.outbox.enqueueFromJournal(name, {}, now) : 0;
      this.logger.info(
        { sink: name, queued },
        fromJournal ? 'new sink starts from the journal' : 'new sink starts from now',
      );
    }
    const watched = await store.watchedLogs.list();
    for (const w of watched)
      if (w.status === 'disabled') await store.watchedLogs.setStatus(w.log, w.objectId, 'active', null);
    await this.ping();
    return watched.length + (await this.parts.registry.registerConfigured(watched));
  }
}
