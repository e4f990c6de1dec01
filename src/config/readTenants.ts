import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { apiKeyFingerprint } from '../api/apiKeyFingerprint.js';
import { ConfigError } from '../errors.js';
import { CONFIG_FILE_MAX_BYTES, PlainFileError, readPlainFile } from '../readPlainFile.js';
import { settleTenants, type SettledTenants } from '../tenants/settleTenants.js';
import {
  DEFAULT_TENANT,
  type ScannedTenant,
  type Tenant,
  type TenantProblem,
  type TenantRecord,
  type TenantRecordChanges,
} from '../tenants/tenant.js';
import { listTenantFiles, type TenantFile } from '../tenants/tenantDirectory.js';
import { loadConfig } from './loadConfig.js';
import type { TenantSource } from './mainConfig.js';
import { tenantConfigSchema, type TenantConfig } from './tenantConfigSchema.js';

/**
 * Reads the tenants of `source` (from `loadMainConfig`): the one tenant `default`, or every file
 * of `tenants.dir`, each merged over the main file's tenant sections and validated on its own,
 * then settled against `records`, the tenant records of the store (settleTenants): who owns each
 * key, and the last valid text of a file now invalid. `previous` are the tenants running now,
 * kept as they are while the directory cannot be read. Problems are returned, never thrown: one
 * bad file stops nobody else.
 */
export function readTenants(
  source: TenantSource,
  previous: readonly Tenant<TenantConfig>[] = [],
  records: readonly TenantRecord[] = [],
): SettledTenants<TenantConfig> {
  if (source.kind === 'main') {
    const { config } = source;
    return {
      tenants: [{ name: DEFAULT_TENANT, file: undefined, config, keyFingerprint: mainKey(config) }],
      problems: [],
      changes: NO_CHANGES,
      recorded: [],
      recordedHere: new Map(),
    };
  }
  return settleTenantScan(source, scanTenantFiles(source), previous, records);
}

type DirectorySource = Extract<TenantSource, { kind: 'directory' }>;

/** The tenant files of a directory as read, before the records settle them. */
export type TenantScan =
  | { readonly ok: true; readonly scanned: readonly ScannedTenant<TenantConfig>[]; readonly unnamed: TenantProblem[] }
  | { readonly ok: false; readonly problem: TenantProblem };

/**
 * The config each tenant file's text gave at its last read, by path: a rescan that finds the same
 * text (and name) reuses that config, and a file whose stat has not moved since a read made once it
 * had settled (TenantFile.settled) is not read again. At thousands of tenants, parsing and
 * validating every file each rescan costs most of a daemon's CPU and a second copy of each config.
 * The key fingerprint is still taken on each scan: a key file changes without its tenant file.
 */
export type TenantConfigMemo = Map<
  string,
  {
    readonly name: string;
    readonly text: string;
    readonly config: TenantConfig;
    /** The file's stat when listed before this read (TenantFile.signature), and whether it had settled. */
    readonly signature: string;
    readonly settled: boolean;
  }
>;

/**
 * Lists and validates every file of the tenants directory. Apart from settling, so that a caller
 * settling inside a transaction of the shared store (TenantRecords.settle) reads no file there.
 * `memo` (kept by the caller from one scan to the next) spares validating a file read unchanged,
 * and reading one whose stat has not moved; `now` is the wall clock file times are compared with.
 */
export function scanTenantFiles(source: DirectorySource, memo?: TenantConfigMemo, now = Date.now()): TenantScan {
  const listing = listTenantFiles(source.dir, now);
  if (!listing.ok) return listing;
  const scanned: ScannedTenant<TenantConfig>[] = [];
  for (const problem of listing.problems) {
    if (problem.tenant !== undefined) scanned.push({ ok: false, name: problem.tenant, problem });
  }
  for (const file of listing.files) {
    const entry = readTenantFile(file, source, memo);
    if (entry !== undefined) scanned.push(entry);
  }
  if (memo !== undefined) {
    const listed = new Set(listing.files.map((file) => file.path));
    for (const path of memo.keys()) if (!listed.has(path)) memo.delete(path);
  }
  return { ok: true, scanned, unnamed: listing.problems.filter((problem) => problem.tenant === undefined) };
}

/**
 * The tenants of `scan` settled against `records` (settleTenants). A directory that could not be
 * read keeps `previous` and changes no record: a remount must not stop or forget any company. So
 * does a directory without a single tenant file while the store records tenants: an empty or
 * wrongly mounted ConfigMap is far likelier than an operator removing every tenant at once, and
 * applied it would stop every company this replica runs. `recordedHere` is that of this replica's
 * previous read (SettledTenants.recordedHere), kept as it is by a read not applied.
 */
export function settleTenantScan(
  source: DirectorySource,
  scan: TenantScan,
  previous: readonly Tenant<TenantConfig>[],
  records: readonly TenantRecord[],
  recordedHere?: ReadonlyMap<string, string>,
): SettledTenants<TenantConfig> {
  const recorded = records.map((r) => r.tenant);
  const unapplied = { tenants: previous, changes: NO_CHANGES, recorded, recordedHere: recordedHere ?? new Map() };
  if (!scan.ok) return { ...unapplied, problems: [scan.problem] };
  if (scan.scanned.length === 0 && records.length > 0)
    return { ...unapplied, problems: [emptyDirectory(source, records)] };
  const paths = new Map(scan.scanned.map((s) => (s.ok ? [s.tenant.name, s.tenant.file] : [s.name, s.problem.file])));
  const lastValid = (record: TenantRecord): ScannedTenant<TenantConfig> => {
    const path = paths.get(record.tenant) ?? join(source.dir, `${record.tenant}.yaml`);
    return validateTenantText({ name: record.tenant, path }, record.fileText, source);
  };
  const settled = settleTenants(scan.scanned, records, lastValid, source.forgetAfterMs, recordedHere);
  return { ...settled, problems: [...scan.unnamed, ...settled.problems] };
}

const NO_CHANGES: TenantRecordChanges = { put: [], markMissing: [], remove: [] };

function emptyDirectory(source: DirectorySource, records: readonly TenantRecord[]): TenantProblem {
  const names = records.map((r) => r.tenant);
  const listed = names.length > 5 ? `${names.slice(0, 5).join(', ')} and ${names.length - 5} more` : names.join(', ');
  const message =
    `the tenants directory ${source.dir} holds no tenant file, while the store records ${names.length} tenants ` +
    `(${listed}); taken for a wrong or empty mount, this read is not applied: the tenants running here keep ` +
    `running, no record is changed, and this replica takes no tenant from the others and reports itself not ` +
    `ready until the directory holds tenant files again. To stop every tenant, stop the replicas`;
  return { code: 'TENANTS_DIR_EMPTY', tenant: undefined, file: source.dir, message, issues: [] };
}

/** One tenant file, or undefined when it vanished since the directory was listed (a ConfigMap swap). */
function readTenantFile(
  file: TenantFile,
  source: DirectorySource,
  memo: TenantConfigMemo | undefined,
): ScannedTenant<TenantConfig> | undefined {
  const known = memo?.get(file.path);
  if (known !== undefined && known.settled && known.signature === file.signature && known.name === file.name)
    return validateTenantText(file, known.text, source, known.config);
  let text: string | undefined;
  try {
    text = readPlainFile(file.path, CONFIG_FILE_MAX_BYTES);
  } catch (error) {
    if (!(error instanceof PlainFileError)) throw error;
    if (error.code === 'ENOENT') return undefined;
    // Unreadable: validated without its text, loadConfig then says why it cannot read the file.
  }
  const unchanged = known !== undefined && known.text === text && known.name === file.name;
  const entry = validateTenantText(file, text, source, unchanged ? known.config : undefined);
  if (memo !== undefined) {
    if (entry.ok && text !== undefined) {
      const { signature, settled } = file;
      memo.set(file.path, { name: file.name, text, config: entry.tenant.config, signature, settled });
    } else memo.delete(file.path);
  }
  if (!entry.ok && !existsSync(file.path)) return undefined;
  return entry;
}

/**
 * `text` validated as the tenant file `file`, merged over the main config's tenant sections;
 * `validated` is the config this same text gave before, taken as it is.
 */
function validateTenantText(
  file: Pick<TenantFile, 'name' | 'path'>,
  text: string | undefined,
  source: DirectorySource,
  validated?: TenantConfig,
): ScannedTenant<TenantConfig> {
  try {
    const config =
      validated ??
      loadConfig(tenantConfigSchema, {
        file: file.path,
        ...(text !== undefined ? { fileText: text } : {}),
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
    return { ok: true, tenant, fileText: text ?? '' };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
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

// Without tenants.dir nothing is compared; a key file that cannot be read yet is reported by the
// key provider when polling starts.
function mainKey(config: TenantConfig): string {
  try {
    return apiKeyFingerprint(config.api);
  } catch (error) {
    if (error instanceof ConfigError) return apiKeyFingerprint({ apiKey: `file:${config.api.apiKeyFile ?? ''}` });
    throw error;
  }
}
