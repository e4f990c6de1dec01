/**
 * `npm run bench`: throughput and memory of the pipeline's stages, printed as tables.
 * Figures are for this machine (2 cores); compare runs on the same machine only.
 */
import { feedStreaming } from './cases/feedStreaming.js';
import { fileSinkDelivery } from './cases/fileSinkDelivery.js';
import { hostilePage } from './cases/hostilePages.js';
import { pollIngest } from './cases/pollIngest.js';
import { postgresDelivery } from './cases/postgresDelivery.js';
import { simulatorCompanies } from './cases/simulatorCompanies.js';
import { mqttDelivery, natsDelivery, rabbitmqDelivery, redisDelivery } from './cases/queueSinkDelivery.js';
import { webhookDelivery } from './cases/webhookDelivery.js';
import { printTable, type BenchRow } from './benchTable.js';

const rows: BenchRow[] = [];
rows.push(await pollIngest(20_000));
rows.push(await fileSinkDelivery(100_000));
printTable('Pipeline', rows);

const webhookRows: BenchRow[] = [];
webhookRows.push(await webhookDelivery(5_000, 1));
webhookRows.push(await webhookDelivery(20_000, 16));
printTable('Webhook sink (target: at least 2,000 events/s at concurrency 16)', webhookRows);

const queueRows: BenchRow[] = [];
for (const measure of [natsDelivery, redisDelivery, rabbitmqDelivery, mqttDelivery])
  queueRows.push(await measure(100_000));
printTable(
  'Queue sinks, outbox pre-filled with 100,000 events (targets: NATS and Redis 5,000 events/s, RabbitMQ 2,000)',
  queueRows,
);

printTable('PostgreSQL sink, outbox pre-filled with 100,000 events (target: 5,000 events/s)', [
  await postgresDelivery(100_000),
]);

printTable(
  'Live stream (SSE) of the pull feed, eventsource clients in the same process (target: 5,000 events/s per stream)',
  [await feedStreaming(100_000, 1), await feedStreaming(20_000, 100)],
);

// Hostile answers: peak RSS of the compiled CLI (npm run build first) polling a hostile service.
printTable('Hostile service answers (target: peak RSS under 200 MiB)', [
  await hostilePage('page of 100,000 entries'),
  await hostilePage('body of 200 MB'),
  await hostilePage('body of 200 MB, padding before data'),
]);

// The many-company simulator of the scale bench: its own memory, so the daemon's can be told apart.
printTable('Simulator serving 1,000 companies of 20 careers and 5 skills (compiled CLI, own process)', [
  await simulatorCompanies(1_000, 600),
  await simulatorCompanies(1_000, 60),
]);

// Scale: the compiled daemon (npm run build first) serving 1,000 and 5,000 tenants against the many-company
// simulator, each its own process, on SQLite and on PostgreSQL (docs/scaling.md).
const { scaleTargets, tenantsScale } = await import('./cases/tenantsScale.js');
for (const tenants of [1_000, 5_000]) {
  const targets = scaleTargets(tenants);
  const scale = (store: 'sqlite' | 'postgres') =>
    tenantsScale({ tenants, store, warmUpSeconds: 60, measureSeconds: 180, eventsPerHour: 60, targets });
  printTable(
    `Scale: one process, ${tenants.toLocaleString('en-US')} tenants (targets: RSS max at most ${targets.rssMaxMiB} MiB, at most one core, 0 429s, at least ${targets.requestsPerSecond} requests/s)`,
    [await scale('sqlite'), await scale('postgres')],
  );
}

// Failover (issue 14): 3 replicas of the compiled daemon share 300 tenants on PostgreSQL with the
// default lease; the one holding the most is killed with SIGKILL (docs/scaling.md).
const { failoverDistribution } = await import('./cases/failoverDistribution.js');
const failover = await failoverDistribution({ tenants: 300, replicas: 3, careers: 20, skills: 5, eventsPerHour: 60 });
printTable(
  'Scale: failover of 3 replicas, 300 tenants, kill -9 of the busiest (seconds, over its tenants)',
  failover.distribution,
);
printTable('Scale: the failover run', [failover.run]);

// Scheduling: the real poll loop, scheduler and read budget, three simulated days per row; then
// the real daemon against the simulator over loopback HTTP, in virtual time.
const { runSchedulingBench } = await import('./scheduling.js');
await runSchedulingBench();

// A large company on one key: 6,001 logs at 900 reads/h, discovery, plan and status (docs/scaling.md).
const { runLargeCompanyBench } = await import('./largeCompanyBench.js');
await runLargeCompanyBench();
