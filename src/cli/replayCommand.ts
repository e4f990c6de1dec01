import { withExistingStore } from './existingStore.js';
import { parseArgs } from 'node:util';
import { systemClock } from '../clock.js';
import { DeliveryEngine } from '../deliver/deliveryEngine.js';
import { LeaseLostError } from '../cluster/writeFence.js';
import { ChangefeedError } from '../errors.js';
import { LOG_KINDS, type LogKind } from '../logs.js';
import { createLogger } from '../observe/createLogger.js';
import { createSink } from '../sinks/sinkRegistry.js';
import { loadTenantConfig } from './loadAppConfig.js';
import { createProgressReporter } from './progressReporter.js';

export const REPLAY_USAGE = `changefeed replay --sink S --since T [--until U] [--log career|skill|identityProvider] [--config FILE] [--tenant NAME] [--queue-only]
  Re-delivers events from the store's journal (kept journal.retentionDays) to one sink, without
  any API read: to fill a newly added sink or recover a consumer's data. T and U are ISO 8601
  times of ingestion. Delivers and exits, showing its progress on stderr (a bar on a terminal,
  otherwise a line every 2 s); with --queue-only it only queues them for a daemon that
  is running (two processes delivering to one sink at once would not keep per-object order).
  With tenants.dir, --tenant names the tenant. Delivering is refused beside a running daemon: on
  SQLite it takes the state directory's lock for the run (STATE_DIR_LOCKED while a daemon holds it),
  on PostgreSQL the tenant's lease (LEASE_HELD while a replica holds it); --queue-only never is.`;

export async function replayCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      tenant: { type: 'string' },
      sink: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      log: { type: 'string' },
      'queue-only': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const { config, tenant } = loadTenantConfig({ configFlag: values.config, tenant: values.tenant }, 'replay');
  const sinkConfig = config.sinks.find((s) => s.name === values.sink);
  if (!sinkConfig)
    throw new ChangefeedError(
      'USAGE',
      `--sink must name a configured sink (${config.sinks.map((s) => s.name).join(', ')})`,
    );
  const since = parseTime('--since', values.since, true);
  const until = parseTime('--until', values.until, false);
  if (values.log !== undefined && !LOG_KINDS.includes(values.log as LogKind))
    throw new ChangefeedError('USAGE', `--log must be one of ${LOG_KINDS.join(', ')}`);
  // Queuing is one idempotent statement the daemon picks up; delivering makes this process a second
  // deliverer of the tenant, so it must hold what the daemon holds: the lease or the state dir lock.
  const lease = values['queue-only'] ? undefined : { command: 'replay', leaseMs: config.cluster.leaseSeconds * 1000 };
  return withExistingStore(config, { tenant, ...(lease ? { lease } : {}) }, async (store, held) => {
    await store.sinks.activate(
      config.sinks.map((s) => ({ name: s.name, type: s.type })),
      systemClock.now(),
    );
    const queued = await store.outbox.enqueueFromJournal(
      sinkConfig.name,
      { since, until, log: values.log as LogKind | undefined },
      systemClock.now(),
    );
    process.stdout.write(`queued ${queued} event${queued === 1 ? '' : 's'} from the journal for ${sinkConfig.name}\n`);
    if (values['queue-only'] || queued === 0) return 0;
    const logger = createLogger({ level: config.log.level, pretty: config.log.pretty });
    const progress = createProgressReporter({
      label: `replay to ${sinkConfig.name}`,
      unit: 'events',
      total: queued,
      stream: process.stderr,
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
    process.stdout.write(`delivered; ${report?.pending ?? 0} still pending, ${report?.dead ?? 0} dead letters\n`);
    return report?.drained ? 0 : 1;
  });
}

function parseTime(flag: string, value: string | undefined, required: boolean): number | undefined {
  if (value === undefined) {
    if (required)
      throw new ChangefeedError('USAGE', `${flag} is required (an ISO 8601 time such as 2026-11-20T00:00:00Z)`);
    return undefined;
  }
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new ChangefeedError('USAGE', `${flag} must be an ISO 8601 time, got "${value}"`);
  return ms;
}
