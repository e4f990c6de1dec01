import type { Command } from 'commander';
import { logKey, type LogKind } from '../logs.js';
import { allocateFrequencies, allocationWeight, alphaFor, expectedDelay } from '../schedule/pollAllocation.js';
import { cronRunsPerHour, discoveryPagesPerRun } from '../poll/discoverySchedule.js';
import { RateEstimator } from '../schedule/rateEstimator.js';
import { emptyRateState, type RateState } from '../schedule/rateState.js';
import { priorsByKind } from '../schedule/sessionPrior.js';
import { discoveryLists, LAST_DISCOVERY_KEY } from '../poll/watchRegistry.js';
import { readAllIds } from '../api/listReader.js';
import type { WatchConfig } from '../poll/watchConfig.js';
import type { AppConfig } from '../config/appConfigSchema.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { withExistingStore } from './existingStore.js';
import { errorCodeOf } from '../errors.js';
import type { CliIo } from './cliIo.js';
import { configOption, jsonOption, tenantOption, type CommandHost, type TenantFlags } from './commandLine.js';
import { loadTenantConfig } from './loadAppConfig.js';
import { openServiceSession } from './serviceSession.js';
import { terminalSafe } from './terminalText.js';

export function definePlanCommand(program: Command, host: CommandHost): void {
  program
    .command('plan')
    .summary('the requests per hour and detection delay the scheduler would give, without polling')
    .description(
      `Prints, without polling, the requests per hour the scheduler would spend and the expected mean and p95 detection delay for the watched logs, from the rates learned so far (or the prior). With discovery on and none recorded in the store, it first reads the discovery lists (shown against the budget; needs the tenant's key), unless --no-discover, which plans the configured logs only. With tenants.dir, --tenant names the tenant whose store, budget and key are used.`,
    )
    .addOption(configOption())
    .addOption(tenantOption())
    .addOption(jsonOption())
    .option('--no-discover', 'plan the configured logs only, without reading the discovery lists')
    .action(host.run((options: PlanOptions) => planCommand(options, host.io)));
}

interface PlanOptions extends TenantFlags {
  json: boolean;
  /** False with --no-discover. */
  discover: boolean;
}

interface PlannedLog {
  log: LogKind;
  objectId: string;
  ratePerHour: number;
  pollsPerHour: number;
  learned: boolean;
}

interface PlanReport {
  /** The tenant planned (`default` without tenants.dir). */
  tenant: string;
  /** The exponent of the allocation (0 for round-robin; `auto` resolved for the current rates). */
  alpha: number;
  watchedLogs: number;
  /** Logs whose rate comes from polls rather than the prior. */
  learnedLogs: number;
  allowancePerHour: number;
  discoveryRequestsPerHour: number;
  expectedRequestsPerHour: number;
  expectedMeanDelayMinutes: number;
  expectedP95DelayMinutes: number;
  busiest: PlannedLog[];
  discovery: PlanDiscovery;
}

async function planCommand(values: PlanOptions, io: CliIo): Promise<number> {
  const { config, tenant } = loadTenantConfig(values, io.env, 'inspection');
  const { watch, budget } = config;
  const schedule = watch.schedule;
  const logs: Array<{ log: LogKind; objectId: string; state: RateState; cost: number }> = [];
  let discoveredInStore = false;
  await withExistingStore(config, { readonly: true, tenant }, async (store) => {
    discoveredInStore = (await store.getMeta(LAST_DISCOVERY_KEY)) !== undefined;
    const estimates = new Map((await store.rates.list()).map((e) => [logKey(e), e]));
    for (const w of (await store.watchedLogs.list()).filter((l) => l.status === 'active')) {
      const e = estimates.get(logKey(w));
      logs.push({ log: w.log, objectId: w.objectId, state: e ?? emptyRateState(), cost: e?.pollCost ?? 1 });
    }
  }).catch((error: unknown) => {
    // No store yet: plan from the config alone.
    if (errorCodeOf(error) !== 'STORE_MISSING') throw error;
  });
  if (logs.length === 0) {
    // No store yet: the configured logs with the prior (discovered ones are unknown until discovery runs).
    if (watch.identityProviderEvents)
      logs.push({ log: 'identity_provider', objectId: '', state: emptyRateState(), cost: 1 });
    for (const id of watch.careers.ids) logs.push({ log: 'career', objectId: id, state: emptyRateState(), cost: 1 });
    for (const id of watch.skills.ids) logs.push({ log: 'skill', objectId: id, state: emptyRateState(), cost: 1 });
  }
  const discovery = await discoverForPlan({
    watch,
    discoveredInStore,
    skip: !values.discover,
    // Only now is the key needed: a plan from the store alone runs where the key is not mounted.
    loadConfig: () => loadTenantConfig(values, io.env, 'service').config,
    env: io.env,
  });
  if (discovery.state === 'read') {
    const known = new Set(logs.map((l) => logKey(l)));
    for (const log of ['career', 'skill'] as const) {
      for (const id of discovery.found[log])
        if (!known.has(logKey({ log, objectId: id })))
          logs.push({ log, objectId: id, state: emptyRateState(), cost: 1 });
    }
  }
  const estimator = new RateEstimator(schedule);
  const priorOf = priorsByKind(logs, schedule);
  const rates = logs.map((l) => estimator.rate(l.state, priorOf(l.log)));
  const allowancePerHour = Math.max(1, Math.floor(budget.readsPerHour * (1 - budget.reserve)));
  const count = (kind: LogKind): number => logs.filter((l) => l.log === kind).length;
  const pages = discoveryPagesPerRun(watch, { careers: count('career'), skills: count('skill') });
  const discoveryRequestsPerHour = pages > 0 ? pages * cronRunsPerHour(watch.discovery.schedule, Date.now()) : 0;
  const maxFrequency = watch.pollIntervalSeconds > 0 ? 3600 / watch.pollIntervalSeconds : Number.POSITIVE_INFINITY;
  const input = {
    costs: logs.map((l) => l.cost),
    budgetPerHour: Math.max(1, allowancePerHour - discoveryRequestsPerHour),
    minFrequency: Math.min(maxFrequency, 60 / schedule.maxIntervalMinutes),
    maxFrequency,
  };
  const alpha = alphaFor(schedule, () => rates, input);
  const { frequencies } = allocateFrequencies({
    ...input,
    weights: logs.map((l, i) => allocationWeight(rates[i] ?? 0, l.cost, alpha)),
  });
  const delay = expectedDelay(rates, frequencies);
  const planned = logs.map((l, i) => ({
    log: l.log,
    objectId: l.objectId,
    ratePerHour: rates[i] ?? 0,
    pollsPerHour: frequencies[i] ?? 0,
    learned: l.state.updatedAt !== null,
  }));
  const report: PlanReport = {
    tenant,
    alpha,
    watchedLogs: logs.length,
    learnedLogs: planned.filter((p) => p.learned).length,
    allowancePerHour,
    discoveryRequestsPerHour: round(discoveryRequestsPerHour),
    expectedRequestsPerHour: round(
      logs.reduce((sum, l, i) => sum + l.cost * (frequencies[i] ?? 0), 0) + discoveryRequestsPerHour,
    ),
    expectedMeanDelayMinutes: round(delay.meanHours * 60),
    expectedP95DelayMinutes: round(delay.p95Hours * 60),
    discovery,
    busiest: [...planned]
      .sort((a, b) => b.ratePerHour - a.ratePerHour)
      .slice(0, 10)
      .map((p) => ({ ...p, ratePerHour: round(p.ratePerHour), pollsPerHour: round(p.pollsPerHour) })),
  };
  io.stdout.write(`${values.json ? JSON.stringify(report, null, 2) : formatPlan(report, schedule.policy)}\n`);
  return 0;
}

const round = (x: number): number => (Number.isFinite(x) ? Math.round(x * 100) / 100 : x);

function formatPlan(r: PlanReport, policy: string): string {
  const lines = [
    `plan${r.tenant === DEFAULT_TENANT ? '' : ` of tenant ${r.tenant}`} (${policy}, alpha ${r.alpha}) for ${r.watchedLogs} watched logs, ${r.learnedLogs} with learned rates (the others use the prior)`,
    `  allowance:           ${r.allowancePerHour} requests/h (cap less reserve)`,
    `  expected requests:   ${r.expectedRequestsPerHour} /h, of which discovery ${r.discoveryRequestsPerHour} /h`,
    `  expected delay:      mean ${r.expectedMeanDelayMinutes} min, p95 ${r.expectedP95DelayMinutes} min (Poisson changes, regular polls)`,
    ...[describePlanDiscovery(r.discovery, r.allowancePerHour)].filter((line) => line !== undefined),
    '',
    '  busiest logs:        rate/h   polls/h',
  ];
  for (const p of r.busiest)
    lines.push(
      // A discovered id is what the service listed.
      `    ${`${p.log}:${terminalSafe(p.objectId || '-')}`.padEnd(28)} ${String(p.ratePerHour).padStart(7)}  ${String(p.pollsPerHour).padStart(8)}`,
    );
  if (r.watchedLogs === 0)
    lines.push('    (none: configure careers/skills ids or run the daemon once so discovery finds them)');
  return lines.join('\n');
}

/** What `plan` learned about discovered objects, for its report. */
type PlanDiscovery =
  | { state: 'off' }
  | { state: 'from-store' }
  | { state: 'read'; requests: number; found: { career: string[]; skill: string[] } }
  | { state: 'skipped'; reason: string };

/**
 * With discovery on and no discovery recorded in the store, a plan of the configured logs alone
 * would describe a much smaller watched set than `run` polls. Reads the lists discovery reads, as
 * `run` would at start (each page one request from the key's bucket), unless told not to.
 */
async function discoverForPlan(args: {
  watch: WatchConfig;
  discoveredInStore: boolean;
  skip: boolean;
  /** The config with the key of the tenant planned (`plan --tenant`), loaded only if the lists are read. */
  loadConfig: () => Pick<AppConfig, 'api' | 'cluster' | 'budget' | 'watch'>;
  env: NodeJS.ProcessEnv;
}): Promise<PlanDiscovery> {
  if (discoveryLists(args.watch).length === 0) return { state: 'off' };
  if (args.discoveredInStore) return { state: 'from-store' };
  if (args.skip) return { state: 'skipped', reason: '--no-discover' };
  const config = args.loadConfig();
  const session = openServiceSession(config, args.env);
  try {
    const found: { career: string[]; skill: string[] } = { career: [], skill: [] };
    for (const list of discoveryLists(config.watch)) {
      found[list.log] = (await readAllIds(session.client, list.path, config.watch.discovery.envelope)).ids;
    }
    return { state: 'read', requests: session.requests(), found };
  } finally {
    await session.close();
  }
}

function describePlanDiscovery(d: PlanDiscovery, allowancePerHour: number): string | undefined {
  switch (d.state) {
    case 'off':
      return undefined;
    case 'from-store':
      return "  discovery:           objects found by the daemon's discovery, from the store";
    case 'read':
      return (
        `  discovery:           read the lists now (${d.requests} requests of ${allowancePerHour}/h): ` +
        `${d.found.career.length} careers, ${d.found.skill.length} skills, planned with the ` +
        `prior`
      );
    case 'skipped':
      return `  discovery:           NOT RUN (${d.reason}): this plan covers the configured logs only, not the objects discovery would add`;
  }
}
