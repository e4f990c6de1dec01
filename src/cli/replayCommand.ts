import { withExistingStore } from './existingStore.js';
import type { Command } from 'commander';
import { systemClock } from '../clock.js';
import { DeliveryEngine } from '../deliver/deliveryEngine.js';
import { LeaseLostError } from '../cluster/writeFence.js';
import { ChangefeedError } from '../errors.js';
import type { LogKind } from '../logs.js';
import { createLogger } from '../observe/createLogger.js';
import { createSink } from '../sinks/sinkRegistry.js';
import { logDestination, type CliIo } from './cliIo.js';
import { configOption, tenantOption, type CommandHost, type TenantFlags } from './commandLine.js';
import { loadTenantConfig } from './loadAppConfig.js';
import { logOption, timeOrAge } from './optionParsers.js';
import { createProgressReporter } from './progressReporter.js';

export function defineReplayCommand(program: Command, host: CommandHost): void {
  program
    .command('replay')
    .summary("re-deliver events from the store's journal to one sink")
    .description(
      `Re-delivers events from the store's journal (kept journal.retentionDays) to one sink, without any API read: to fill a newly added sink or recover a consumer's data. --since and --until are times of ingestion: an ISO 8601 time with its zone as RFC 3339 writes it (2026-11-20T08:30:00Z, 2026-11-20T09:30:00+01:00; a time without Z or an offset is refused rather than read in the local zone), a date for its midnight UTC (2026-11-20), or an age (90s, 30m, 1h, 7d ago). Delivers and exits; with --queue-only it only queues them for a daemon that is running (two processes delivering to one sink at once would not keep per-object order). With tenants.dir, --tenant names the tenant. Delivering shows its progress on stderr (a bar on a terminal, otherwise a line every 2 s) and is refused beside a running daemon: on SQLite it takes the state directory's lock for the run (STATE_DIR_LOCKED while a daemon holds it), on PostgreSQL the tenant's lease (LEASE_HELD while a replica holds it); --queue-only never is.`,
    )
    .option('--sink <name>', 'the configured sink to deliver to')
    .requiredOption(
      '--since <time>',
      'from this time of ingestion: 2026-11-20T08:30:00Z, 2026-11-20 (UTC) or an age such as 1h or 7d',
      timeOrAge(),
    )
    .option(
      '--until <time>',
      'up to this time of ingestion: 2026-11-20T08:30:00Z, 2026-11-20 (UTC) or an age such as 30m',
      timeOrAge(),
    )
    .addOption(logOption('only events of this log', host.io))
    .addOption(configOption())
    .addOption(tenantOption())
    .option('--queue-only', 'only queue the events for a running daemon', false)
    .action(host.run((options: ReplayOptions) => replayCommand(options, host.io)));
}

interface ReplayOptions extends TenantFlags {
  sink?: string;
  /** Epoch milliseconds. */
  since: number;
  /** Epoch milliseconds. */
  until?: number;
  log?: LogKind;
  queueOnly: boolean;
}

async function replayCommand(values: ReplayOptions, io: CliIo): Promise<number> {
  const { since, until } = values;
  // An empty range queues nothing and would end "queued 0" with exit 0, as if the journal were empty.
  if (until !== undefined && until <= since)
    throw new ChangefeedError(
      'USAGE',
      `--until (${new Date(until).toISOString()}) must come after --since (${new Date(since).toISOString()})`,
    );
  const { config, tenant } = loadTenantConfig(values, io.env, 'replay');
  const sinkConfig = config.sinks.find((s) => s.name === values.sink);
  if (!sinkConfig)
    throw new ChangefeedError(
      'USAGE',
      `--sink must name a configured sink (${config.sinks.map((s) => s.name).join(', ')})`,
    );
  // Queuing is one idempotent statement the daemon picks up; delivering makes this process a second
  // deliverer of the tenant, so it must hold what the daemon holds: the lease or the state dir lock.
  const lease = values.queueOnly ? undefined : { command: 'replay', leaseMs: config.cluster.leaseSeconds * 1000 };
  return withExistingStore(config, { tenant, ...(lease ? { lease } : {}) }, async (store, held) => {
    await store.sinks.activate(
      config.sinks.map((s) => ({ name: s.name, type: s.type })),
      systemClock.now(),
    );
    const queued = await store.outbox.enqueueFromJournal(
      sinkConfig.name,
      { since, until, log: values.log },
      systemClock.now(),
    );
    io.stdout.write(`queued ${queued} event${queued === 1 ? '' : 's'} from the journal for ${sinkConfig.name}\n`);
    if (values.queueOnly || queued === 0) return 0;
    const logger = createLogger({
      level: config.log.level,
      pretty: config.log.pretty,
      destination: logDestination(io),
    });
    const progress = createProgressReporter({
      label: `replay to ${sinkConfig.name}`,
      unit: 'events',
      total: queued,
      stream: io.stderr,
      now: () => performance.now(),
    });
    let settled = 0;
    const engine = new DeliveryEngine(
      [{ sink: createSink(sinkConfig), delivery: sinkConfig.delivery, filter: sinkConfig.filter }],
      { store, clock: systemClock, logger, onOutcome: (o) => progress.update((settled += o.delivered + o.dead)) },
    );
    const lost = held?.lost.then((reason) => {
      throw new LeaseLostError(tenant, reason);
    });
    let report;
    try {
      [report] = await Promise.race([engine.drain(systemClock.now() + 3_600_000), ...(lost ? [lost] : [])]);
    } finally {
      await engine.stop();
      progress.stop();
    }
    io.stdout.write(`delivered; ${report?.pending ?? 0} still pending, ${report?.dead ?? 0} dead letters\n`);
    return report?.drained ? 0 : 1;
  });
}
