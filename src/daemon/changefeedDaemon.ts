import type { AppConfig } from '../config/appConfigSchema.js';
import { tenantAppConfig, type MainConfig, type ProcessConfig, type TenantSource } from '../config/mainConfig.js';
import { readTenants, scanTenantFiles, settleTenantScan, type TenantConfigMemo } from '../config/readTenants.js';
import { TENANT_SECTIONS, type TenantConfig } from '../config/tenantConfigSchema.js';
import { systemClock } from '../clock.js';
import { readFeedTicketKey } from '../cluster/feedTicketKey.js';
import type { ConsoleSource, TenantPlacement } from '../console/consoleSource.js';
import { OperatorConsole } from '../console/operatorConsole.js';
import { ChangefeedError, describeError, isAbortError } from '../errors.js';
import { startHealthServer, type HealthServer, type ReadinessCheck } from '../observe/healthServer.js';
import { ProcessMetrics } from '../observe/processMetrics.js';
import { openStoreBackend } from '../store/openStoreBackend.js';
import type { StoreBackend } from '../store/storeBackend.js';
import { StateDirLock } from '../store/stateDirLock.js';
import { describeStoreLocation, storeLocation } from '../store/storeLocation.js';
import type { Tenant, TenantRecords } from '../tenants/tenant.js';
import { TenantsWatcher, type TenantsReport } from '../tenants/tenantsWatcher.js';
import type { DaemonOptions } from './daemonParts.js';
import { holderRedirect } from './holderRedirect.js';
import { ProcessFeed } from './processFeed.js';
import { StoreOpening, whileStoreRefuses } from './storeOpening.js';
import { tenantReadiness } from './tenantReadiness.js';
import type { OnceReport, TenantRuntime } from './tenantRuntime.js';
import { TenantLeases } from './tenantLeases.js';
import { TenantSupervisor } from './tenantSupervisor.js';

export type { DaemonOptions, OnceReport };

/**
 * The process: the store engine, the health server, and the tenants it serves, each in its own
 * TenantRuntime. Without `tenants.dir` the one tenant `default` runs exactly as a single-company
 * daemon. With it, tenant files added, changed or removed start, restart or stop their tenant
 * while the others go on. On SQLite one process writes the state directory (its lock).
 */
export class ChangefeedDaemon {
  readonly config: ProcessConfig;
  private readonly main: MainConfig;
  private readonly lock: StateDirLock | undefined;
  /** Set by stopForReload: the lock outlives this daemon, for the next one of the process. */
  private handingOverLock = false;
  /** The lock of the same directory that the daemon before this one handed over (a reload), as it was given. */
  private readonly handedLock: StateDirLock | undefined;
  private backend: StoreBackend | undefined;
  private tenantSupervisor: TenantSupervisor | undefined;
  /** On a PostgreSQL store: which tenants this replica runs. */
  private leases: TenantLeases | undefined;
  private watcher: TenantsWatcher<TenantConfig> | undefined;
  /**
   * Who owns each API key and each tenant's last valid file, in the store (shared by the replicas
   * on PostgreSQL), so the tenants are decided alike by every replica and after every restart.
   * Taken from the store as it opens, before any tenant is read.
   */
  private tenantRecords: TenantRecords | undefined;
  private tenants: readonly Tenant<TenantConfig>[] = [];
  /** The tenants the store records, as the last settlement of the directory found them. */
  private recorded: readonly string[] = [];
  private report: TenantsReport<TenantConfig> | undefined;
  private healthServer: HealthServer | undefined;
  /** The pull feed's listener and tokens, when feed.enabled. */
  private readonly feed: ProcessFeed | undefined;
  /** The operator console at /console on the health server, when console.enabled. */
  private readonly console: OperatorConsole | undefined;
  /** Opening the store at start, while it is under way or the database is awaited. */
  private opening: StoreOpening | undefined;
  /** Settles once start() has its health server and store, or gave up on them. */
  private opened: Promise<void> | undefined;
  /** Reports of the tenants directory, applied one after another. */
  private applying: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Aborted by stop: ends a wait for a store that refuses a start (`start`'s `waitForStore`). */
  private readonly stopping = new AbortController();
  /** Why the store refuses the start that waits for it, while it does. */
  private storeRefusal: string | undefined;
  private readonly options: DaemonOptions & { metrics: ProcessMetrics };

  /**
   * `stateDirLock`: the lock the daemon before this one kept for it (stopForReload), taken over;
   * a start() that fails leaves it held, for the daemon the reload goes back to.
   */
  constructor(config: AppConfig | MainConfig, options: DaemonOptions, stateDirLock?: StateDirLock) {
    this.options = { ...options, metrics: options.metrics ?? new ProcessMetrics() };
    this.main = 'process' in config ? config : asMainConfig(config);
    this.config = this.main.process;
    ProcessFeed.check(this.main);
    if (this.config.feed.enabled)
      this.feed = new ProcessFeed(this.config.feed, options.logger, this.options.metrics.feedRouter);
    OperatorConsole.check(this.config);
    if (this.config.console.enabled) this.console = this.createConsole();
    // Before the store is opened: a second daemon must not even migrate it.
    if (storeLocation(this.config).kind === 'sqlite') {
      this.lock = StateDirLock.takeOver(stateDirLock, this.config.stateDir);
      if (this.lock === stateDirLock) this.handedLock = stateDirLock;
    } else stateDirLock?.release();
  }

  /**
   * Opens the store and starts the tenants, serving health from before the store is awaited
   * (a PostgreSQL that is down: StoreOpening). Resolves early, having started nothing, when
   * stopped meanwhile. A store or tenant config that cannot work fails the start before anything
   * is served on SQLite, which never has to be waited for, and everything opened is closed again.
   * `waitForStore` (a reload going back to the configuration that ran): a store that refuses the
   * start (a full disk, a store locked or read-only) is waited for, health served and /readyz
   * saying why, as that configuration waited running, instead of failing the start.
   */
  async start(options: { waitForStore?: boolean } = {}): Promise<void> {
    const waitForStore = options.waitForStore ?? false;
    const opening = this.serveAndOpen(waitForStore);
    this.opened = opening.then(settled, settled);
    try {
      const supervisor = await opening;
      if (!this.stopped) await this.startTenants(supervisor, waitForStore);
    } catch (error) {
      if (this.stopped && isAbortError(error)) return;
      // A reload's start that failed leaves the directory held for the daemon it goes back to:
      // let go, a command could take the directory in between, and taking it again writes the
      // pid file, which a full disk refuses (the reload then had nothing to run and exited).
      if (this.lock !== undefined && this.lock === this.handedLock) this.handingOverLock = true;
      await this.stop();
      throw error;
    }
  }

  private async startTenants(supervisor: TenantSupervisor, waitForStore: boolean): Promise<void> {
    if (this.main.tenants.kind === 'main') {
      this.tenants = readTenants(this.main.tenants).tenants;
      if (!this.leases)
        for (const tenant of this.tenants) {
          // Stopped while an earlier tenant's start waited for the store (a reload's next SIGHUP).
          if (this.stopped) return;
          const start = (): Promise<void> => supervisor.start(tenant, { rethrow: true });
          await (waitForStore ? this.whileStoreRefuses(start) : start());
        }
    } else await this.watchTenants(this.main.tenants);
    if (this.stopped) return;
    this.leases?.keeper.start();
    this.options.logger.info(
      {
        instanceId: this.config.cluster.instanceId,
        tenants: supervisor.runtimes.map((r) => r.tenant),
        store: this.backend?.location,
      },
      'changefeed running',
    );
  }

  private async serveAndOpen(waitForStore: boolean): Promise<TenantSupervisor> {
    if (this.lock && this.main.tenants.kind === 'main' && !waitForStore) {
      // SQLite opens at once: the store and the tenant built on it are checked before anything
      // is served or polled, so a bad config fails the start with its own message.
      const supervisor = await this.open({ retry: false });
      for (const tenant of readTenants(this.main.tenants).tenants) await supervisor.prepare(tenant);
    }
    // Before the store: /healthz 200 while the database is unreachable (a restart would not help), /readyz says why.
    if (this.config.http.port !== null) {
      const runtimes = (): TenantRuntime[] => this.tenantSupervisor?.runtimes ?? [];
      this.options.metrics.watch({
        running: () => runtimes().length,
        failed: () => this.tenantSupervisor?.startFailures.size ?? 0,
      });
      this.healthServer = await startHealthServer(
        this.config.http,
        {
          alive: () => !this.stopped && runtimes().every((r) => r.alive),
          readiness: () => this.readiness(),
          metrics: this.options.metrics,
          logger: this.options.logger,
        },
        this.console && {
          owns: (path) => OperatorConsole.owns(path),
          handle: (req, res) => this.console?.handle(req, res),
        },
      );
      this.options.logger.info({ url: this.healthServer.url }, 'health, readiness and metrics served');
      if (this.console)
        this.options.logger.info({ url: `${this.healthServer.url}/console` }, 'operator console served');
    }
    if (this.feed) {
      if (this.main.tenants.kind === 'main') this.feed.setTenants(readTenants(this.main.tenants).tenants);
      const url = await this.feed.start((tenant) => this.tenantSupervisor?.runtime(tenant)?.feed);
      this.options.logger.info({ url }, 'event feed served');
    }
    const open = (): Promise<TenantSupervisor> => this.open({ retry: true });
    return waitForStore ? this.whileStoreRefuses(open) : open();
  }

  /** `attempt`, again while the store refuses it (whileStoreRefuses), until it succeeds or the daemon stops. */
  private whileStoreRefuses<T>(attempt: () => Promise<T>): Promise<T> {
    return whileStoreRefuses({
      attempt,
      clock: this.options.clock ?? systemClock,
      logger: this.options.logger,
      location: this.backend?.location ?? describeStoreLocation(storeLocation(this.config)),
      signal: this.stopping.signal,
      onRefusal: (problem) => (this.storeRefusal = problem),
    });
  }

  /** Starts the tenants of the directory and follows its changes. */
  private async watchTenants(source: Extract<TenantSource, { kind: 'directory' }>): Promise<void> {
    const memo: TenantConfigMemo = new Map();
    // The file texts this replica's last read left in the records (TENANT_FILE_DIFFERS).
    let recordedHere: ReadonlyMap<string, string> = new Map();
    this.watcher = new TenantsWatcher<TenantConfig>({
      dir: source.dir,
      load: async (previous) => {
        // Files are read before the records' transaction, which then only decides and writes.
        const scan = scanTenantFiles(source, memo);
        const read = await this.tenantRecords!.settle((records) => {
          const settled = settleTenantScan(source, scan, previous, records, recordedHere);
          this.recorded = settled.recorded;
          return { result: settled, changes: settled.changes };
        });
        recordedHere = read.recordedHere;
        // One line per read, so a change can be placed among the reads (the first read after it sees it).
        this.options.logger.debug({ tenants: read.tenants.length }, 'tenants directory read');
        return read;
      },
      onReport: (report) => {
        // Caught here, so one failed application neither escapes nor stops the next one.
        this.applying = this.applying
          .then(() => this.apply(report))
          .catch((error: unknown) =>
            this.options.logger.error(
              { err: describeError(error) },
              'applying the tenants failed; the next change applies again',
            ),
          );
      },
      onError: (error) => this.options.logger.error({ err: describeError(error) }, 'reading the tenants failed'),
      rescanMs: this.config.tenants.rescanSeconds * 1000,
      ...(this.options.clock ? { clock: this.options.clock } : {}),
    });
    await this.watcher.start();
    await this.applying;
  }

  /** `run --once`: one sweep of every tenant's logs, then delivery of everything pending. */
  async runOnce(deliveryTimeoutMs = 60_000): Promise<OnceReport> {
    const supervisor = await this.open({ retry: false });
    if (this.leases)
      throw new ChangefeedError(
        'USAGE',
        'run --once works on a SQLite store; on a PostgreSQL store the replicas lease the tenants, so run them instead',
      );
    const source = this.main.tenants;
    // Settled against the store's records, as `run` settles them: the same tenants either way.
    const tenants = await this.tenantRecords!.settle((records) => {
      const settled = readTenants(source, [], records);
      return { result: settled, changes: settled.changes };
    });
    for (const problem of tenants.problems) this.options.logger.error({ file: problem.file }, problem.message);
    const reports: OnceReport[] = [];
    for (const tenant of tenants.tenants)
      reports.push(await (await supervisor.prepare(tenant)).runOnce(deliveryTimeoutMs));
    return {
      sweep: {
        polled: reports.reduce((n, r) => n + r.sweep.polled, 0),
        emitted: reports.reduce((n, r) => n + r.sweep.emitted, 0),
        failures: reports.flatMap((r) => r.sweep.failures),
      },
      sinks: reports.flatMap((r) => r.sinks),
      gone: reports.flatMap((r) => r.gone),
      ok: tenants.problems.length === 0 && reports.every((r) => r.ok),
    };
  }

  /** Where the health server (and the console, at /console) answers, once started. */
  get healthUrl(): string | undefined {
    return this.healthServer?.url;
  }

  /** Stops the tenants (each drains its in-flight deliveries), the server and the store. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.opening?.abort();
    this.stopping.abort();
    // What a start under way opens (at once if it waits for the store) must be there to be closed.
    await this.opened;
    await this.watcher?.stop();
    await this.applying;
    if (this.leases) await this.leases.stop();
    else await this.tenantSupervisor?.stopAll();
    await this.feed?.close();
    this.console?.close();
    await this.healthServer?.close();
    if (this.healthServer) this.options.metrics.watch(undefined);
    if (this.leases) this.options.metrics.leases.watch(undefined);
    await this.backend?.close();
    if (!this.handingOverLock) this.lock?.release();
  }

  /**
   * Stops as `stop` does but keeps the state directory's lock and returns it, for the daemon a
   * reload starts next (its constructor's `stateDirLock`): let go in between, a command started
   * at that moment (`replay`, `store migrate`) could take the directory and fail the reload.
   * Undefined when a stop was already under way (a shutdown), which lets the lock go itself.
   */
  async stopForReload(): Promise<StateDirLock | undefined> {
    if (this.stopped) return undefined;
    this.handingOverLock = true;
    await this.stop();
    return this.lock;
  }

  /** What /readyz reports: the process, then each tenant (its checks prefixed with its name, but for `default`). */
  readiness(): ReadinessCheck[] {
    return tenantReadiness({
      runtimes: this.tenantSupervisor?.runtimes ?? [],
      startFailures: this.tenantSupervisor?.startFailures ?? new Map(),
      problems: this.report?.problems ?? [],
      isolated: this.main.tenants.kind === 'directory',
      viewProblem:
        this.report?.problems.find((p) => p.code === 'TENANTS_DIR_EMPTY')?.message ?? this.leases?.keeper.sittingOut,
      backendProblem:
        this.storeRefusal ??
        (this.backend ? this.leases?.keeper.problem : (this.opening?.problem ?? 'the store is not open yet')),
    });
  }

  /** The store and the tenants' supervisor; `retry` (run, not run --once) waits for a database that is down. */
  private async open(options: { retry: boolean }): Promise<TenantSupervisor> {
    if (this.backend === undefined) {
      const leaseMs = this.config.cluster.leaseSeconds * 1000;
      const openOnce = (): Promise<StoreBackend> =>
        openStoreBackend(this.config, {
          applicationName: `changefeed ${this.config.cluster.instanceId}`,
          idleInTransactionTimeoutMs: leaseMs,
        });
      let backend: StoreBackend;
      if (options.retry) {
        this.opening = new StoreOpening({
          open: openOnce,
          clock: this.options.clock ?? systemClock,
          logger: this.options.logger,
          location: describeStoreLocation(storeLocation(this.config)),
        });
        backend = await this.opening.open();
      } else backend = await openOnce();
      // Before the backend is kept: on SQLite this opens the file, which a full disk can refuse,
      // and a start that waits for the store (whileStoreRefuses) opens it all again.
      try {
        this.tenantRecords = backend.tenantRecords();
      } catch (error) {
        await backend.close();
        throw error;
      }
      this.backend = backend;
      this.options.metrics.store.watch(this.backend.activity);
      const supervisor = this.supervisor(this.backend);
      const shared = this.backend.sharedByReplicas;
      if (shared) {
        const { instanceId } = this.config.cluster;
        // Without a feed of its own nothing answers there: others must not send clients to it.
        const advertiseUrl = this.feed ? this.config.cluster.advertiseUrl : undefined;
        const healthUrl = this.healthServer ? this.config.cluster.advertiseHealthUrl : undefined;
        this.leases = new TenantLeases({
          pool: shared.leasePool,
          instanceId,
          advertised: { feedUrl: advertiseUrl, healthUrl },
          leaseMs,
          supervisor,
          tenants: () => this.tenants,
          recorded: () => this.recorded,
          logger: this.options.logger,
          metrics: this.options.metrics.leases,
        });
        if (this.console || this.feed) {
          const sharedKey = await readFeedTicketKey(shared.leasePool);
          // Sessions signed by one replica are accepted by every other: a key derived from the shared one.
          this.console?.useSharedSecret(sharedKey);
          if (this.feed) {
            const clock = this.options.clock ?? systemClock;
            this.feed.sendElsewhere(
              holderRedirect({ table: this.leases.table, self: { instanceId, advertiseUrl }, leaseMs }),
              { key: sharedKey, now: () => clock.now() },
            );
          }
        }
      }
    }
    return this.supervisor(this.backend);
  }

  /**
   * The console reads each tenant's store opened the way the commands open it, without a fence:
   * its writes are the commands' (re-queue a dead letter, queue a replay), safe beside the holder.
   */
  private createConsole(): OperatorConsole {
    const source: ConsoleSource = {
      tenants: () =>
        this.tenants.map((t) => ({
          name: t.name,
          keyFingerprint: t.keyFingerprint,
          sinks: t.config.sinks.map((s) => ({ name: s.name, type: s.type })),
        })),
      placement: async (tenant): Promise<TenantPlacement> => {
        const supervisor = this.tenantSupervisor;
        if (supervisor?.runtime(tenant)) return { kind: 'here' };
        if (this.leases) {
          const row = (await this.leases.table.list()).find((r) => r.tenant === tenant);
          if (row?.holder !== undefined && row.expiresInMs > 0)
            return row.holder === this.config.cluster.instanceId
              ? { kind: 'idle' }
              : { kind: 'held', holder: row.holder, live: row.holderLive };
        }
        const failure = supervisor?.startFailures.get(tenant);
        return failure === undefined ? { kind: 'idle' } : { kind: 'failed', error: failure };
      },
      store: async (tenant) => this.backend?.tenantStore(tenant),
    };
    return new OperatorConsole(this.config.console, source, {
      clock: this.options.clock ?? systemClock,
      logger: this.options.logger,
      // Tails are answers of the health listener: its write deadline.
      writeTimeoutMs: this.config.http.writeTimeoutSeconds * 1000,
    });
  }

  private supervisor(backend: StoreBackend): TenantSupervisor {
    this.tenantSupervisor ??= new TenantSupervisor({
      backend,
      options: this.options,
      configOf: (tenant) => tenantAppConfig(this.config, tenant.config),
      fenceOf: (tenant) => this.leases?.keeper.fence(tenant),
      requestGuardOf: (tenant) => this.leases?.keeper.requestGuard(tenant),
      leaseMs: backend.sharedByReplicas ? this.config.cluster.leaseSeconds * 1000 : undefined,
    });
    return this.tenantSupervisor;
  }

  /** A new view of the tenants directory: start the added, restart the changed, stop the removed. */
  private async apply(report: TenantsReport<TenantConfig>): Promise<void> {
    const supervisor = this.tenantSupervisor;
    if (!supervisor || this.stopped) return;
    this.report = report;
    this.tenants = report.tenants;
    this.feed?.setTenants(report.tenants);
    for (const problem of report.problems)
      this.options.logger.error(
        { tenant: problem.tenant, file: problem.file, issues: problem.issues },
        problem.message,
      );
    const { added, changed, removed } = report.diff;
    // Logged as the change is seen: with leases, when an added tenant starts is the lease round's call.
    if (added.length + changed.length + removed.length > 0)
      this.options.logger.info({ added, changed, removed }, 'tenants changed');
    const byName = new Map(report.tenants.map((t) => [t.name, t]));
    const leases = this.leases;
    if (leases) {
      // Added tenants are taken by whichever replica the next lease round assigns.
      await Promise.all([
        ...removed.map((name) => leases.removed(name)),
        ...changed.flatMap((name) => byName.get(name) ?? []).map((tenant) => leases.changed(tenant)),
      ]);
      return;
    }
    const starting = [...added, ...changed].flatMap((name) => byName.get(name) ?? []);
    await Promise.all([
      ...removed.map((name) => supervisor.stop(name)),
      ...starting.map((tenant) => this.startTenant(supervisor, tenant)),
    ]);
  }

  /**
   * A tenant of the directory started. A start the store refuses (a full disk) is tried again
   * until the store takes it, as a running tenant's polling waits for it: left out, the tenant
   * stayed stopped until its file changed. Any other failure the supervisor reported (startFailed)
   * and keeps out of the other tenants' way.
   */
  private startTenant(supervisor: TenantSupervisor, tenant: Tenant<TenantConfig>): Promise<void> {
    return this.whileStoreRefuses(() => supervisor.start(tenant, { rethrow: true })).catch(() => undefined);
  }
}

const settled = (): void => undefined;

/** A config without tenants.dir: its tenant sections are the tenant `default`. */
function asMainConfig(config: AppConfig): MainConfig {
  const sections = Object.fromEntries(TENANT_SECTIONS.map((s) => [s, config[s]]));
  const feed = { tokens: config.feed.tokens, tokenFiles: config.feed.tokenFiles };
  const tenant = { ...sections, feed } as unknown as TenantConfig;
  return { process: config, tenants: { kind: 'main', config: tenant } };
}
