import { readAllIds } from '../api/listReader.js';
import type { WatchConfig } from '../poll/watchConfig.js';
import { discoveryLists } from '../poll/watchRegistry.js';
import type { AppConfig } from '../config/appConfigSchema.js';
import { openServiceSession } from './serviceSession.js';

/** What `plan` learned about discovered objects, for its report. */
export type PlanDiscovery =
  | { state: 'off' }
  | { state: 'from-store' }
  | { state: 'read'; requests: number; found: { career: string[]; skill: string[] } }
  | { state: 'skipped'; reason: string };

/**
 * With discovery on and no discovery recorded in the store, a plan of the configured logs alone
 * would describe a much smaller watched set than `run` polls. Reads the lists discovery reads, as
 * `run` would at start (each page one request from the key's bucket), unless told not to.
 */
export async function discoverForPlan(args: {
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

export function describePlanDiscovery(d: PlanDiscovery, allowancePerHour: number): string | undefined {
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
