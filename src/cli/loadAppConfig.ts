import type { z } from 'zod';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readTenants } from '../config/readTenants.js';
import { ChangefeedError } from '../errors.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import {
  CONFIG_VIEWS,
  ENV_MAPPING,
  unreadSections,
  type AppConfig,
  type ConfigView,
} from '../config/appConfigSchema.js';
import { loadConfig } from '../config/loadConfig.js';
import { loadMainConfig, tenantAppConfig, tenantsDirOf, type MainConfig } from '../config/mainConfig.js';
import type { TenantFlags } from './commandLine.js';

/** The default config path, used when neither --config nor CHANGEFEED_CONFIG names one and it exists. */
const DEFAULT_CONFIG_PATH = 'config/changefeed.yaml';

interface ConfigArgs {
  configFlag?: string | undefined;
  env?: NodeJS.ProcessEnv;
  overrides?: Record<string, unknown>;
}

/** Resolves the config file (--config, CHANGEFEED_CONFIG, or the default path if present) and loads every layer. */
export function loadAppConfig(args: ConfigArgs): { config: AppConfig; file: string | undefined } {
  const file = configFile(args);
  return { config: loadView(args, file, 'full'), file };
}

/**
 * The main config for commands that know tenants: with `tenants.dir`, its tenant sections are
 * defaults for the tenant files (read them with `readTenants`); without it, the one tenant `default`.
 */
export function loadTenantedConfig(args: ConfigArgs): MainConfig {
  return loadMainConfig(sources(args, configFile(args)));
}

function configFile(args: ConfigArgs): string | undefined {
  const env = args.env ?? process.env;
  // Set but empty is unset: a template or a compose file that leaves it blank names no file (read
  // as a path, "" is the working directory, refused as EISDIR).
  const fromEnv = env.CHANGEFEED_CONFIG === '' ? undefined : env.CHANGEFEED_CONFIG;
  return args.configFlag ?? fromEnv ?? (existsSync(DEFAULT_CONFIG_PATH) ? DEFAULT_CONFIG_PATH : undefined);
}

function sources(args: ConfigArgs, file: string | undefined) {
  return {
    file,
    env: args.env ?? process.env,
    envMapping: { ...ENV_MAPPING },
    overrides: args.overrides,
  };
}

type TenantConfigViews = { [V in ConfigView]: z.infer<(typeof CONFIG_VIEWS)[V]> };

/** The config loaded as `view`: that view's schema, its unread secret sections' unset `${VAR}` no error. */
function loadView<V extends ConfigView>(args: ConfigArgs, file: string | undefined, view: V): TenantConfigViews[V] {
  const keepUnsetEnvUnder = unreadSections(view);
  return loadConfig(CONFIG_VIEWS[view], { ...sources(args, file), keepUnsetEnvUnder }) as TenantConfigViews[V];
}

/** One tenant's config for a command, and where it came from. */
export interface LoadedTenantConfig<C> {
  config: C;
  tenant: string;
  /** The tenant's file, or the main config file (undefined: defaults and environment only). */
  file: string | undefined;
}

/**
 * The config of one tenant for a command that reads or acts on its store or calls the service
 * with its key: without `tenants.dir` and `--tenant`, the main config loaded as `view` says;
 * otherwise the tenant's file merged over the main config, validated as the daemon would (so
 * with the tenant's own key, never the main file's). USAGE names the tenants there are when
 * `--tenant` is missing or unknown, and the tenant and its file when that file is invalid.
 */
export function loadTenantConfig<V extends ConfigView>(
  flags: TenantFlags,
  env: NodeJS.ProcessEnv,
  view: V,
): LoadedTenantConfig<TenantConfigViews[V]> {
  const args = { configFlag: flags.config, tenant: flags.tenant, env };
  const file = configFile(args);
  // Without tenants.dir: the one tenant, without a credential unless `view` needs it.
  if (tenantsDirOf(sources(args, file)) === undefined) {
    if (args.tenant !== undefined && args.tenant !== DEFAULT_TENANT)
      throw new ChangefeedError('USAGE', `no tenant "${args.tenant}": without tenants.dir the only tenant is default`);
    return { config: loadView(args, file, view), tenant: DEFAULT_TENANT, file };
  }
  const main = loadMainConfig(sources(args, file));
  const set = readTenants(main.tenants);
  const names = set.tenants.map((t) => t.name).join(', ') || 'none';
  if (args.tenant === undefined)
    throw new ChangefeedError('USAGE', `name the tenant with --tenant NAME (tenants: ${names})`);
  const tenant = set.tenants.find((t) => t.name === args.tenant);
  if (!tenant) {
    const problem = set.problems.find((p) => p.tenant === args.tenant);
    const dir = main.tenants.kind === 'directory' ? main.tenants.dir : '';
    throw new ChangefeedError(
      'USAGE',
      problem
        ? `tenant ${args.tenant}: ${problem.message}`
        : `no tenant "${args.tenant}": no file ${join(dir, `${args.tenant}.yaml`)} (or .yml) (tenants: ${names})`,
    );
  }
  // The tenant file was validated in full (tenantConfigSchema), which every view accepts.
  const config = tenantAppConfig(main.process, tenant.config) as TenantConfigViews[V];
  return { config, tenant: tenant.name, file: tenant.file };
}
