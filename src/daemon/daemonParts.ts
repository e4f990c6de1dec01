import type { Logger } from 'pino';
import { createApiKeyProvider } from '../api/apiKeyProvider.js';
import type { ResponseMeta } from '../api/responseHeaders.js';
import { systemClock, type Clock } from '../clock.js';
import { appConfigSchema, type AppConfig } from '../config/appConfigSchema.js';
import { listConfigSecrets } from '../config/secretFields.js';
import { DeliveryEngine } from '../deliver/deliveryEngine.js';
import type { RequeueWatch } from '../deliver/requeueWatch.js';
import { EventFeed } from '../feed/eventFeed.js';
import { readFeedTokens } from '../feed/feedTokens.js';
import type { TenantMetricSource, TenantMetrics } from '../observe/changefeedMetrics.js';
import type { ProcessMetrics } from '../observe/processMetrics.js';
import { LogPoller } from '../poll/logPoller.js';
import { PollLoop } from '../poll/pollLoop.js';
import { ReadBudget } from '../poll/readBudget.js';
import { ServerClock } from '../poll/serverClock.js';
import { watchConfigDeprecations } from '../poll/watchConfig.js';
import { WatchRegistry } from '../poll/watchRegistry.js';
import { registerSecret } from '../secrets/secretRegistry.js';
import { createSink } from '../sinks/sinkRegistry.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import { CredentialTracker } from './credentialTracker.js';
import { createServiceClient } from './serviceConnection.js';

export interface DaemonOptions {
  logger: Logger;
  clock?: Clock;
  /** Where stdout sinks write. */
  stdout?: NodeJS.WritableStream;
  env?: NodeJS.ProcessEnv;
  /** `run --shutdown-timeout`: bounds how long a stopping tenant drains (drainWithinMs). Default 20 s. */
  shutdownTimeoutMs?: number;
  /**
   * The process's metrics, kept across reloads (runCommand makes one per process); a daemon
   * given none makes its own.
   */
  metrics?: ProcessMetrics;
}

/** What a tenant is assembled with: the daemon's options, and what its tenants share. */
export interface TenantOptions extends DaemonOptions {
  metrics: ProcessMetrics;
  /** Checks the re-queue counts of all the tenants' delivery engines on one timer. */
  requeues?: RequeueWatch;
}

/** Everything a running tenant is made of, in the order data flows through it. */
export type DaemonParts = ReturnType<typeof assembleTenant>;

/**
 * Wires one tenant's parts around its store: the service's clock and read budget, the client,
 * the watch registry and poll loop, and the delivery engine with one worker per sink. Polling and
 * delivery only meet in the store, so either can stall without blocking the other.
 */
export function assembleTenant(
  tenant: string,
  config: AppConfig,
  store: ChangefeedStore,
  /** `logger` is the tenant's own (bound to its name): each part logs through it. */
  options: TenantOptions,
  /** A write of the tenant refused with LEASE_LOST, by polling or delivery: the runtime stops. */
  onLeaseLost: (error: unknown) => void,
  /** On a shared store: the lease's local check, made before each request to the service and each write to a sink. */
  requestGuard?: (refused?: string) => void,
) {
  const logger = options.logger;
  for (const secret of listConfigSecrets(appConfigSchema, config)) registerSecret(secret);
  const clock = options.clock ?? systemClock;
  const metrics = options.metrics.tenants.forTenant(tenant);
  const feed = config.feed.enabled ? createFeed(config, store, clock, metrics, logger) : undefined;
  const serverClock = new ServerClock(clock, {
    toleranceMs: config.api.clockToleranceSeconds * 1000,
    onRejected: (rejected) => {
      metrics.observeClockRejected();
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
  const budget = new ReadBudget(config.budget, clock);
  const apiKey = createApiKeyProvider(config.api, options.env);
  const credential = new CredentialTracker(apiKey.source);
  const client = createServiceClient(config, {
    apiKey,
    clock,
    logger,
    budget,
    serverClock,
    onResponse,
    ...(requestGuard ? { requestGuard } : {}),
  });
  const metricSource: TenantMetricSource = {
    store,
    now: () => clock.now(),
    allowancePerHour: () => budget.allowancePerHour(),
    serviceClockSkewSeconds: () => serverClock.skewMs / 1000,
    schedule: () => pollLoop.scheduler.snapshot(clock.now()),
    sinks: () => engine.connectionStates(),
  };
  function onResponse(meta: ResponseMeta, path: string): void {
    metrics.observeResponse(meta, path);
    credential.observe(meta.status);
  }
  for (const note of watchConfigDeprecations(config.watch)) logger.warn(note);
  const shared = { client, store, serverClock, clock, watch: config.watch, logger };
  const registry = new WatchRegistry(shared);
  // Object.assign: a spread followed by properties gives each object a hidden class of its own on Node 20.
  const poller = new LogPoller(Object.assign({}, shared, { events: config.events, baseUrl: config.api.baseUrl }));
  const engine = new DeliveryEngine(
    config.sinks.map((sinkConfig) => ({
      sink: createSink(sinkConfig, { stdout: options.stdout }),
      delivery: sinkConfig.delivery,
      filter: sinkConfig.filter,
    })),
    {
      store,
      clock,
      logger,
      ...(options.requeues ? { requeues: options.requeues } : {}),
      onOutcome: (outcome) => metrics.observeDelivery(outcome),
      onLeaseLost,
      ...(requestGuard ? { leaseGuard: requestGuard } : {}),
    },
  );
  const pollLoop = new PollLoop({
    poller,
    registry,
    store,
    clock,
    watch: config.watch,
    logger,
    credentialChanged: (rejectedKey) => apiKey.replaces(rejectedKey),
    budget,
    serviceNow: () => serverClock.now(),
    onLeaseLost,
    onPolled: (watched, outcome) => {
      metrics.observePoll(watched.log, outcome, clock.now());
      if ((outcome.result?.emitted ?? 0) === 0) return;
      engine.notify();
      feed?.notify();
    },
  });
  return { clock, store, serverClock, credential, client, metrics, metricSource, registry, pollLoop, engine, feed };
}

function createFeed(
  config: AppConfig,
  store: ChangefeedStore,
  clock: Clock,
  metrics: TenantMetrics,
  logger: Logger,
): EventFeed {
  // The tenant's tokens are checked by the feed router; read here so a token file that cannot
  // be read fails this tenant's start, where /readyz and `status` show it.
  readFeedTokens(config.feed.tokens, config.feed.tokenFiles, 'feed.tokenFiles');
  return new EventFeed(config.feed, store.journal, clock, metrics, logger);
}
