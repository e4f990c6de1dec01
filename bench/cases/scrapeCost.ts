import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { LOG_KINDS } from '../../src/logs.js';
import { ProcessMetrics } from '../../src/observe/processMetrics.js';
import { openStoreBackend } from '../../src/store/openStoreBackend.js';
import { storeConfigSchema } from '../../src/store/storeConfig.js';
import type { BenchRow } from '../benchTable.js';

const POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
const T = Date.UTC(2026, 10, 1);
const CAREERS = 20;
const SKILLS = 5;

/**
 * What a /metrics scrape costs in CPU, in this process: N tenants on one store (SQLite or
 * PostgreSQL), each with 26 watched logs and one sink as `tenantsScale` runs them, its counters and
 * histograms moved as polls and deliveries move them, scraped `scrapes` times one after another
 * with nothing else running. CPU seconds of this process (user and system), not wall time, so the
 * figure holds on a busy machine; the database's own CPU (PostgreSQL) is not in it.
 */
export async function scrapeCost(options: {
  store: 'sqlite' | 'postgres';
  tenants: number;
  scrapes: number;
}): Promise<BenchRow> {
  const dir = mkdtempSync(join(tmpdir(), 'cf-scrape-cost-'));
  const schema = `${process.env.BENCH_SCHEMA_PREFIX ?? 'cf_bench'}_${randomBytes(6).toString('hex')}`;
  const store = storeConfigSchema.parse(options.store === 'postgres' ? { url: POSTGRES_URL, schema } : {});
  const backend = await openStoreBackend({ stateDir: dir, store });
  try {
    const metrics = new ProcessMetrics();
    for (let i = 0; i < options.tenants; i++) {
      const tenant = `company-${i}`;
      const tenantStore = await backend.tenantStore(tenant);
      await tenantStore.sinks.activate([{ name: 'file', type: 'file' }], T);
      await tenantStore.watchedLogs.registerAll([
        { log: 'identity_provider', objectId: '', origin: 'config', coverageStart: T, now: T },
        ...Array.from({ length: CAREERS }, (_, c) => ({
          log: 'career' as const,
          objectId: `c-${c}`,
          origin: 'discovered' as const,
          coverageStart: T,
          now: T,
        })),
        ...Array.from({ length: SKILLS }, (_, s) => ({
          log: 'skill' as const,
          objectId: `s-${s}`,
          origin: 'discovered' as const,
          coverageStart: T,
          now: T,
        })),
      ]);
      const counted = metrics.tenants.forTenant(tenant);
      for (const log of LOG_KINDS) {
        counted.observePoll(
          log,
          { result: { emitted: 1, duplicates: 1, quarantined: 0, emittedPerformedAt: [T - 30_000] } as never },
          T,
        );
        counted.observePoll(log, { error: { code: 'API_TIMEOUT' } }, T);
      }
      for (const path of ['/api/v1/identity-provider-events', '/api/v1/careers/c-1/activity', '/api/v1/careers'])
        counted.observeResponse({ status: 200, remaining: 800 } as never, path);
      counted.observeDelivery({ sink: 'file', delivered: 3, retried: 1, dead: 0, latenciesMs: [120, 900, 4_000] });
      counted.attach({
        store: tenantStore,
        now: () => T + 60_000,
        allowancePerHour: () => 900,
        serviceClockSkewSeconds: () => 0.5,
        schedule: () => ({ alpha: 0.5, pollBudgetPerHour: 850, followUpsLastHour: 2 }),
        sinks: () => [
          { sink: 'file', disabled: false, circuit: 'closed', disconnectedSince: null, failingSince: null },
        ],
      });
    }
    let bytes = 0;
    const scrape = () =>
      metrics.write((part) => {
        bytes += part.length;
        return Promise.resolve();
      });
    // The first scrape starts Node's default metrics and warms the code up: not counted.
    await scrape();
    bytes = 0;
    const before = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < options.scrapes; i++) await scrape();
    const cpu = process.cpuUsage(before);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6 / options.scrapes;
    return {
      case: `${options.tenants.toLocaleString('en-US')} tenants, ${options.store === 'postgres' ? 'PostgreSQL' : 'SQLite'}`,
      scrapes: options.scrapes,
      'scrape ms': (performance.now() - started) / options.scrapes,
      'scrape CPU ms': cpuSeconds * 1000,
      'scrape CPU µs per tenant': (cpuSeconds * 1e6) / options.tenants,
      'scrape MB': bytes / 1e6 / options.scrapes,
    };
  } finally {
    await backend.close();
    rmSync(dir, { recursive: true, force: true });
    if (options.store === 'postgres') {
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  }
}

// `npx tsx bench/cases/scrapeCost.ts [sqlite|postgres] [tenants] [scrapes]`
if (process.argv[1] === import.meta.filename) {
  const [store = 'sqlite', tenants = '1000', scrapes = '10'] = process.argv.slice(2);
  const { printTable } = await import('../benchTable.js');
  printTable('A /metrics scrape, in process', [
    await scrapeCost({
      store: store === 'postgres' ? 'postgres' : 'sqlite',
      tenants: Number(tenants),
      scrapes: Number(scrapes),
    }),
  ]);
}
