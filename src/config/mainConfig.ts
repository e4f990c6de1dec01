import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { tenantsConfigSchema } from '../tenants/tenantsConfig.js';
import { appConfigSchema, type AppConfig } from './appConfigSchema.js';
import { getAtPath } from './configPath.js';
import { loadConfig, type ConfigSources } from './loadConfig.js';
import { readConfigFile } from './readConfigFile.js';
import { TENANT_SECTIONS, tenantDefaultsSchema, type TenantConfig } from './tenantConfigSchema.js';

type TenantSection = (typeof TENANT_SECTIONS)[number];

/** The process-wide sections: one daemon, whatever the number of tenants. */
export type ProcessConfig = Omit<AppConfig, TenantSection>;

export type TenantSource =
  /** No `tenants.dir`: the one tenant `default`, from the main config exactly as without tenants. */
  | { readonly kind: 'main'; readonly config: TenantConfig }
  | {
      readonly kind: 'directory';
      readonly dir: string;
      /** The main config's tenant sections, as written (after `${VAR}` and environment): what each file merges over. */
      readonly defaults: Record<string, unknown>;
      /** Where a default was set, for errors about a tenant: `at <main file>:<line>:<col>`. */
      readonly describeDefault: (path: readonly PropertyKey[]) => string;
      /** Read by `${VAR}` references in the tenant files. */
      readonly env: NodeJS.ProcessEnv;
      /** `tenants.forgetAfterSeconds` in ms: how long a tenant's record outlives its file (settleTenants). */
      readonly forgetAfterMs: number;
    };

export interface MainConfig {
  readonly process: ProcessConfig;
  readonly tenants: TenantSource;
}

const probeSchema = z.object({ tenants: tenantsConfigSchema.prefault({}) }).passthrough();

const rawDefaultsSchema = appConfigSchema.extend(
  Object.fromEntries(TENANT_SECTIONS.map((section) => [section, z.unknown().optional()])) as Record<
    TenantSection,
    z.ZodOptional<z.ZodUnknown>
  >,
);

const TENANT_TOKEN_IN_MAIN_FILE =
  "with tenants.dir set, a token of the main file's feed.tokens would read every company: put each " +
  "tenant's tokens in its own file (feed.tokens there), or list a token meant for every tenant in feed.allTenantsTokens";

/**
 * The main file when `tenants.dir` is set: `api` and `sinks` are optional defaults, `api` without
 * a credential, and no tenant's feed token (`feed.tokens`, `feed.tokenFiles`).
 */
export const directoryMainSchema = appConfigSchema.extend({
  api: tenantDefaultsSchema.shape.api,
  sinks: tenantDefaultsSchema.shape.sinks,
  feed: appConfigSchema.shape.feed.superRefine((feed, ctx) => {
    for (const key of ['tokens', 'tokenFiles'] as const)
      if (feed[key].length > 0) ctx.addIssue({ code: 'custom', path: [key], message: TENANT_TOKEN_IN_MAIN_FILE });
  }),
});

/**
 * The whole config of one tenant: the process-wide sections with the tenant's over them. The
 * feed's listener and limits are the process's; its tokens (`feed.tokens`, `feed.tokenFiles`)
 * are the tenant's own, never the main file's.
 */
export function tenantAppConfig<P extends ProcessConfig>(
  process: P,
  tenant: TenantConfig,
): P & TenantConfig & { feed: AppConfig['feed'] } {
  // Object.assign, not spreads followed by `feed`: on Node 20 such an object gets a hidden class of
  // its own, about 430 bytes for each tenant's config (docs/scaling.md, "5,000 tenants under 1 GB").
  const feed = Object.assign({}, process.feed, {
    tokens: tenant.feed?.tokens ?? [],
    tokenFiles: tenant.feed?.tokenFiles ?? [],
  });
  return Object.assign({}, process, tenant, { feed });
}

/**
 * Loads the main config file (with environment and flags, as `loadConfig`). Without `tenants.dir`
 * it is the whole config of the tenant `default`. With it, the tenant sections are validated as
 * defaults (no credential, `api` and `sinks` optional) and kept as written, for each tenant file
 * to merge over (`readTenants`).
 */
export function loadMainConfig(sources: ConfigSources): MainConfig {
  const dir = tenantsDirOf(sources);
  if (dir === undefined) {
    const config = loadConfig(appConfigSchema, sources);
    const { api, watch, budget, events, sinks, journal } = config;
    const feed = { tokens: config.feed.tokens, tokenFiles: config.feed.tokenFiles };
    const tenant: TenantConfig = { api, watch, budget, events, sinks, journal, feed };
    return { process: withoutTenantSections(config), tenants: { kind: 'main', config: tenant } };
  }
  const config = loadConfig(directoryMainSchema, sources);
  const raw = loadConfig(rawDefaultsSchema, sources) as Record<string, unknown>;
  const defaults: Record<string, unknown> = {};
  for (const section of TENANT_SECTIONS) if (raw[section] !== undefined) defaults[section] = raw[section];
  return {
    process: withoutTenantSections(config as unknown as AppConfig),
    tenants: {
      kind: 'directory',
      dir,
      defaults,
      describeDefault: describeDefaults(sources.file),
      env: sources.env ?? process.env,
      forgetAfterMs: config.tenants.forgetAfterSeconds * 1000,
    },
  };
}

/**
 * `tenants.dir` as the sources set it, without validating anything else; undefined when the
 * `tenants` section is itself invalid, so the full load reports every problem of the file at once.
 */
export function tenantsDirOf(sources: ConfigSources): string | undefined {
  try {
    return loadConfig(probeSchema, sources).tenants.dir;
  } catch (error) {
    if (error instanceof ConfigError) return undefined;
    throw error;
  }
}

function withoutTenantSections(config: AppConfig): ProcessConfig {
  const tenantSection = (key: string): boolean => (TENANT_SECTIONS as readonly string[]).includes(key);
  return Object.fromEntries(Object.entries(config).filter(([key]) => !tenantSection(key))) as ProcessConfig;
}

function describeDefaults(mainFile: string | undefined): (path: readonly PropertyKey[]) => string {
  const file = mainFile === undefined ? undefined : readConfigFile(mainFile);
  return (path) => {
    const at = file && getAtPath(file.value, path) !== undefined ? file.locate(path) : undefined;
    return at && file ? `at ${file.path}:${at.line}:${at.col}` : 'from the main config or its environment';
  };
}
