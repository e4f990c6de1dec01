import type { Logger } from 'pino';
import { createApiKeyProvider } from './api/apiKeyProvider.js';
import type { ServiceClient } from './api/serviceClient.js';
import { systemClock, type Clock } from './clock.js';
import { appConfigSchema, type AppConfig } from './config/appConfigSchema.js';
import { listConfigSecrets } from './config/secretFields.js';
import { registerSecret } from './observe/secretRegistry.js';
import { DeliveryEngine, type DrainReport } from './deliver/deliveryEngine.js';
import type { BatchOutcome } from './deliver/sinkWorkerOptions.js';
import { ConfigError, describeError, isAbortError } from './errors.js';
import { EventFeed } from './feed/eventFeed.js';
import { LogPoller } from './poll/logPoller.js';
import { PollLoop, type SweepSummary } from './poll/pollLoop.js';
import { ReadBudget } from './poll/readBudget.js';
import { ServerClock } from './poll/serverClock.js';
import { WatchRegistry } from './poll/watchRegistry.js';
import { createSink } from './sinks/sinkRegistry.js';
import { ChangefeedStore } from './store/changefeedStore.js';
import { storePath } from './store/database.js';
import { StateDirLock } from './store/stateDirLock.js';
import { ChangefeedMetrics } from './observe/changefeedMetrics.js';
import { createServiceClient, pingService } from './serviceConnection.js';
import { startHealthServer, type HealthServer, type ReadinessCheck } from './observe/healthServer.js';

export interface DaemonOptions {
  logger: Logger;
  clock?: Clock;
  /** Where stdout sinks write. */
  stdout?: NodeJS.WritableStream;
  env?: NodeJS.ProcessEnv;
  onBatchOutcome?: (outcome: BatchOutcome) => void;
}

export interface OnceReport {
  sweep: SweepSummary;
  sinks: DrainReport[];
  /** Configured ids the service does not know (404): a typo or a deleted object. */
  gone: { log: string; objectId: string; reason: string }[];
  ok: boolean;
}

const PRUNE_INTERVAL_MS = 3_600_000;

/**
 * The daemon: polls the watched logs into the store and delivers the outbox to the sinks.
 * Polling and delivery only meet in the store, so either can stall without blocking the other.
 */
export class ChangefeedDaemon {
  readonly store: ChangefeedStore;
  readonly client: ServiceClient;
  readonly budget: ReadBudget;
  readonly serverClock: ServerClock;
  readonly engine: DeliveryEngine;
  readonly pollLoop: PollLoop;
  readonly registry: WatchRegistry;
  readonly metrics: ChangefeedMetrics;
  private readonly clock: Clock;
  private readonly abort = new AbortController();
  /** Whether the service accepted the key on the last request: undefined before any answer. */
  private credentialAccepted: boolean | undefined;
  private credentialProblem: string | undefined;
  private healthServer: HealthServer | undefined;
  /** The journal over HTTP, when feed.enabled. */
  readonly feed: EventFeed | undefined;
  private pruning: Promise<void> | undefined;
  private stopped = false;
  private readonly lock: StateDirLock;

  constructor(
    readonly config: AppConfig,
    private readonly options: DaemonOptions,
  ) {
    const logger = options.logger;
    for (const secret of listConfigSecrets(appConfigSchema, config)) registerSecret(secret);
    this.clock = options.clock ?? systemClock;
    // Before the store is opened: a second daemon must not even migrate it.
    this.lock = StateDirLock.acquire(config.stateDir);
    try {
      this.store = ChangefeedStore.open(storePath(config.stateDir));
    } catch (error) {
      this.lock.release();
      throw error;
    }
    this.serverClock = new ServerClock(this.clock, {
      toleranceMs: config.api.clockToleranceSeconds * 1000,
      onRejected: (rejected) => {
        this.metrics.observeClockRejected();
        logger.warn(
          {
            skewSeconds: Math.round(rejected.offsetMs / 1000),
            jumpSeconds: Math.round(rejected.jumpMs / 1000),
            agreeing: rejected.agreeing,
          },
          "the service's Date header jumped beyond api.clockToleranceSeconds; not believed: windows " +
            'end at the last believable service time',
        );
      },
    });
    try {
      this.feed = config.feed.enabled ? createFeed(config, this.store, this.clock) : undefined;
    } catch (error) {
      this.store.close();
      this.lock.release();
      throw error;
    }
    this.budget = new ReadBudget(config.budget, this.clock);
    this.metrics = new ChangefeedMetrics(this.store, {
      now: () => this.clock.now(),
      allowancePerHour: () => this.budget.allowancePerHour(),
      serviceClockSkewSeconds: () => this.serverClock.skewMs / 1000,
      schedule: () => this.pollLoop.scheduler.snapshot(this.clock.now()),
    });
    const apiKey = createApiKeyProvider(config.api, options.env);
    this.client = createServiceClient(config, {
      apiKey,
      clock: this.clock,
      logger,
      budget: this.budget,
      serverClock: this.serverClock,
      onResponse: (meta, path) => {
        this.metrics.observeResponse(meta, path);
        this.trackCredential(meta.status);
      },
    });
    const serverClock = this.serverClock;
    this.engine = new DeliveryEngine(
      config.sinks.map((sinkConfig) => ({
        sink: createSink(sinkConfig, { stdout: options.stdout }),
        delivery: sinkConfig.delivery,
        filter: sinkConfig.filter,
      })),
      {
        store: this.store,
        clock: this.clock,
        logger,
        onOutcome: (outcome) => {
          this.metrics.observeDelivery(outcome);
          options.onBatchOutcome?.(outcome);
        },
      },
    );
    this.registry = new WatchRegistry({
      client: this.client,
      store: this.store,
      serverClock,
      clock: this.clock,
      watch: config.watch,
      logger,
    });
    const poller = new LogPoller({
      client: this.client,
      store: this.store,
      serverClock,
      clock: this.clock,
      watch: config.watch,
      events: config.events,
      baseUrl: config.api.baseUrl,
      logger,
    });
    this.pollLoop = new PollLoop({
      poller,
      registry: this.registry,
      store: this.store,
      clock: this.clock,
      watch: config.watch,
      logger,
      credentialChanged: () => apiKey.hasChanged(),
      budget: this.budget,
      serviceNow: () => serverClock.now(),
      onPolled: (watched, outcome) => {
        this.metrics.observePoll(watched.log, outcome, this.clock.now());
        if ((outcome.result?.emitted ?? 0) > 0) {
          this.engine.notify();
          this.feed?.notify();
        }
      },
    });
  }

  /**
   * Prepares the store: sinks seen for the first time start from now, logs disabled by an earlier
   * run (missing scope, rejected request) get another chance, configured logs are registered.
   */
  private async prepare(): Promise<void> {
    const now = this.clock.now();
    const added = this.store.sinks.activate(
      this.config.sinks.map((s) => ({ name: s.name, type: s.type })),
      now,
    );
    for (const name of added) {
      const fromJournal = this.config.sinks.find((s) => s.name === name)?.startFrom === 'journal';
      const queued = fromJournal ? this.store.outbox.enqueueFromJournal(name, {}, now) : 0;
      this.options.logger.info(
        { sink: name, queued },
        fromJournal ? 'new sink starts from the journal' : 'new sink starts from now',
      );
    }
    for (const w of this.store.watchedLogs.list()) {
      if (w.status === 'disabled') this.store.watchedLogs.setStatus(w.log, w.objectId, 'active', null);
    }
    await this.ping();
    this.registry.registerConfigured();
  }

  /** One request to learn the service's clock and check the key before anything is registered. */
  async ping(): Promise<boolean> {
    try {
      await pingService(this.client, this.abort.signal);
      return true;
    } catch (error) {
      if (isAbortError(error)) throw error;
      this.options.logger.error(
        { err: describeError(error), requestId: (error as { requestId?: string }).requestId },
        'ping failed; polling will retry',
      );
      return false;
    }
  }

  async start(): Promise<void> {
    if (this.config.http.port !== null) {
      this.healthServer = await startHealthServer(this.config.http, {
        alive: () => !this.stopped && this.pollLoop.state !== 'stopped',
        readiness: () => this.readiness(),
        metrics: this.metrics.registry,
        ...(this.feed ? { routes: this.feed.handle.bind(this.feed) } : {}),
      });
      this.options.logger.info({ url: this.healthServer.url }, 'health, readiness and metrics served');
    }
    await this.prepare();
    this.engine.start();
    this.pollLoop.start();
    this.pruning = this.pruneLoop();
    this.options.logger.info(
      { sinks: this.engine.sinkNames, watched: this.store.watchedLogs.list().length, stateDir: this.config.stateDir },
      'changefeed running',
    );
  }

  /** `run --once`: one sweep of every watched log, then delivery of everything pending. */
  async runOnce(deliveryTimeoutMs = 60_000): Promise<OnceReport> {
    await this.prepare();
    const deadBefore = new Map(this.engine.sinkNames.map((name) => [name, this.store.outbox.counts(name).dead]));
    const sweep = await this.pollLoop.sweepOnce();
    const sinks = await this.engine.drain(this.clock.now() + deliveryTimeoutMs);
    // Dead letters left by an earlier run were reported then; only new ones fail this run.
    const gone = this.registry.configuredGone();
    const ok =
      sweep.failures.length === 0 &&
      gone.length === 0 &&
      sinks.every((s) => s.drained && s.dead <= (deadBefore.get(s.sink) ?? 0));
    return { sweep, sinks, gone, ok };
  }

  /** Stops polling, lets in-flight deliveries finish, closes sinks and the store. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort();
    await this.pollLoop.stop();
    await this.engine.stop();
    await this.pruning;
    await this.client.close();
    this.feed?.close();
    await this.healthServer?.close();
    this.store.close();
    this.lock.release();
  }

  /** What /readyz reports: store open, key accepted, polling running, every sink connected or reconnecting briefly. */
  readiness(): ReadinessCheck[] {
    const now = this.clock.now();
    const graceMs = this.config.http.sinkGraceSeconds * 1000;
    const checks: ReadinessCheck[] = [
      storeCheck(this.store),
      {
        name: 'credential',
        ok: this.credentialAccepted === true,
        detail: this.credentialAccepted === undefined ? 'no answer from the service yet' : this.credentialProblem,
      },
      {
        name: 'polling',
        ok: this.pollLoop.state === 'running',
        detail: this.pollLoop.state === 'running' ? undefined : `poll loop ${this.pollLoop.state}`,
      },
      clockCheck(this.serverClock.problem()),
    ];
    for (const sink of this.engine.connectionStates()) {
      const down = sink.disconnectedSince === null ? 0 : now - sink.disconnectedSince;
      const ok = !sink.disabled && down <= graceMs;
      const detail = sink.disabled
        ? `disabled: ${sink.lastError ?? ''}`
        : sink.disconnectedSince === null
          ? undefined
          : `not connected for ${Math.round(down / 1000)} s${sink.lastError ? `: ${sink.lastError}` : ''}`;
      checks.push({ name: `sink:${sink.sink}`, ok, ...(detail ? { detail } : {}) });
    }
    return checks;
  }

  /** Other statuses (a 403 for a missing scope, a 5xx) say nothing about the key itself. */
  private trackCredential(status: number): void {
    if (status >= 200 && status < 300) {
      this.credentialAccepted = true;
      this.credentialProblem = undefined;
    } else if (status === 401) {
      this.credentialAccepted = false;
      this.credentialProblem = `the service rejected the key (401); check ${this.client.credentialSource}`;
    }
  }

  private async pruneLoop(): Promise<void> {
    const retentionMs = this.config.journal.retentionDays * 86_400_000;
    while (!this.abort.signal.aborted) {
      try {
        const removed = this.store.outbox.prune(this.clock.now() - retentionMs);
        if (removed > 0) this.options.logger.info({ removed }, 'pruned delivered events past the journal retention');
      } catch (error) {
        this.options.logger.error({ err: describeError(error) }, 'journal pruning failed; next attempt in an hour');
      }
      try {
        await this.clock.sleep(PRUNE_INTERVAL_MS, this.abort.signal);
      } catch (error) {
        if (isAbortError(error)) return;
        throw error;
      }
    }
  }
}

function createFeed(config: AppConfig, store: ChangefeedStore, clock: Clock): EventFeed {
  if (config.http.port === null)
    throw new ConfigError('feed.enabled needs the HTTP server: set http.port (or CHANGEFEED_HTTP_PORT)', [
      { path: 'http.port', message: 'set a port for the feed to be served on' },
    ]);
  return new EventFeed(config.feed, store.journal, clock);
}

function clockCheck(problem: string | undefined): ReadinessCheck {
  return problem === undefined ? { name: 'clock', ok: true } : { name: 'clock', ok: false, detail: problem };
}

function storeCheck(store: ChangefeedStore): ReadinessCheck {
  const problem = store.db.open ? store.health.problem : 'the store is closed';
  return problem === undefined ? { name: 'store', ok: true } : { name: 'store', ok: false, detail: problem };
}
