import { existsSync } from 'node:fs';
import { apiKeyFingerprint } from '../api/apiKeyFingerprint.js';
import { ConfigError } from '../errors.js';
import { settleTenants } from '../tenants/settleTenants.js';
import { DEFAULT_TENANT, type ScannedTenant, type Tenant, type TenantSet } from '../tenants/tenant.js';
import { listTenantFiles, type TenantFile } from '../tenants/tenantDirectory.js';
import { loadConfig } from './loadConfig.js';
import type { TenantSource } from './mainConfig.js';
import { tenantConfigSchema, type TenantConfig } from './tenantConfigSchema.js';

/**
 * Reads the tenants of `source` (from `loadMainConfig`): the one tenant `default`, or every file
 * of `tenants.dir`, each merged over the main file's tenant sections and validated on its own.
 * `previous` are the tenants running now: they keep their keys, and their last valid config when
 * their file turns invalid (`settleTenants`). Problems are returned, never thrown: one bad file
 * stops nobody else, and a directory that cannot be read keeps every running tenant.
 */
export function readTenants(
  source: TenantSource,
  previous: readonly Tenant<TenantConfig>[] = [],
): TenantSet<TenantConfig> {
  if (source.kind === 'main') {
    const { config } = source;
    return {
      tenants: [{ name: DEFAULT_TENANT, file: undefined, config, keyFingerprint: mainKey(config) }],
      problems: [],
    };
  }
  const listing = listTenantFiles(source.dir);
  if (!listing.ok) return { tenants: previous, problems: [listing.problem] };

  const scanned: ScannedTenant<TenantConfig>[] = [];
  for (const problem of listing.problems) {
    if (problem.tenant !== undefined) scanned.push({ ok: false, name: problem.tenant, problem });
  }
  for (const file of listing.files) {
    const entry = readTenantFile(file, source);
    if (entry !== undefined) scanned.push(entry);
  }
  const settled = settleTenants(previous, scanned);
  const unnamed = listing.problems.filter((problem) => problem.tenant === undefined);
  return { tenants: settled.tenants, problems: [...unnamed, ...settled.problems] };
}

type DirectorySource = Extract<TenantSource, { kind: 'directory' }>;

/** One tenant file, or undefined when it vanished since the directory was listed (a ConfigMap swap). */
function readTenantFile(file: TenantFile, source: DirectorySource): ScannedTenant<TenantConfig> | undefined {
  try {
    const config = loadConfig(tenantConfigSchema, {
      file: file.path,
      env: source.env,
      embeddedDefaults: source.defaults,
      describeEmbeddedDefault: source.describeDefault,
    });
    const tenant: Tenant<TenantConfig> = {
      name: file.name,
      file: file.path,
      config,
      keyFingerprint: apiKeyFingerprint(config.api),
    };
    return { ok: true, tenant };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    if (!existsSync(file.path)) return undefined;
    const message = `tenant "${file.name}" (${file.path}): ${error.message}`;
    const problem = {
      code: 'CONFIG_INVALID',
      tenant: file.name,
      file: file.path,
      message,
      issues: error.issues,
    } as const;
    return { ok: false, name: file.name, problem };
  }
}

// Without tenants.dir nothing is compared, and a key file that cannot be read yet is reported by
// the key provider when polling starts, as before tenants existed.
function mainKey(config: TenantConfig): string {
  try {
    return apiKeyFingerprint(config.api);
  } catch (error) {
    if (error instanceof ConfigError) return apiKeyFingerprint({ apiKey: `file:${config.api.apiKeyFile ?? ''}` });
    throw error;
  }
}
