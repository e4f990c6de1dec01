import type { TenantConfig } from '../config/tenantConfigSchema.js';
import type { WatchConfig } from '../poll/watchConfig.js';
import { compareNames } from '../tenants/tenantDirectory.js';
import { shortFingerprint, type TenantProblem, type TenantSet } from '../tenants/tenant.js';
import { terminalSafe } from './terminalText.js';

export interface TenantRow {
  name: string;
  /** The tenant's file, or `(main config)` for `default` without `tenants.dir`. */
  source: string;
  valid: boolean;
  /** The first 12 hex digits of the key's sha256, to tell keys apart; null when the file is invalid. */
  keyFingerprint: string | null;
  sinks: { name: string; type: string }[];
  watch: {
    careers: { ids: number; discover: boolean };
    skills: { ids: number; discover: boolean };
    identityProviderEvents: boolean;
    startFrom: string;
    pollIntervalSeconds: number;
  } | null;
  problems: { code: string; message: string }[];
  /** On a PostgreSQL store: who holds the tenant's lease now (null: nobody, it is free or expired). */
  lease?: { holder: string | null; epoch: number; expiresInSeconds: number | null };
}

export interface TenantsReport {
  /** `tenants.dir`, or null when the tenant `default` comes from the main config. */
  dir: string | null;
  tenants: TenantRow[];
  /** Problems of the directory itself or of a file that names no tenant. */
  problems: { code: string; file: string; message: string }[];
}

const MAIN_CONFIG_SOURCE = '(main config)';

/** One row per tenant, valid or not, sorted by name; the problems no tenant owns apart. */
export function buildTenantsReport(dir: string | undefined, set: TenantSet<TenantConfig>): TenantsReport {
  const rows = new Map<string, TenantRow>();
  for (const tenant of set.tenants) {
    rows.set(tenant.name, {
      name: tenant.name,
      source: tenant.file ?? MAIN_CONFIG_SOURCE,
      valid: true,
      keyFingerprint: shortFingerprint(tenant.keyFingerprint),
      sinks: tenant.config.sinks.map((sink) => ({ name: sink.name, type: sink.type })),
      watch: watchSummary(tenant.config.watch),
      problems: [],
    });
  }
  const unowned: TenantsReport['problems'] = [];
  for (const problem of set.problems) {
    if (problem.tenant === undefined) {
      unowned.push({ code: problem.code, file: problem.file, message: problem.message });
      continue;
    }
    const row = rows.get(problem.tenant) ?? invalidRow(problem);
    row.valid = false;
    row.problems.push({ code: problem.code, message: problem.message });
    rows.set(problem.tenant, row);
  }
  const tenants = [...rows.values()].sort((a, b) => compareNames(a.name, b.name));
  return { dir: dir ?? null, tenants, problems: unowned };
}

function invalidRow(problem: TenantProblem): TenantRow {
  return {
    name: problem.tenant ?? '',
    source: problem.file,
    valid: false,
    keyFingerprint: null,
    sinks: [],
    watch: null,
    problems: [],
  };
}

function watchSummary(watch: WatchConfig): NonNullable<TenantRow['watch']> {
  return {
    careers: { ids: watch.careers.ids.length, discover: watch.careers.discover },
    skills: { ids: watch.skills.ids.length, discover: watch.skills.discover },
    identityProviderEvents: watch.identityProviderEvents,
    startFrom: watch.startFrom,
    pollIntervalSeconds: watch.pollIntervalSeconds,
  };
}

/** The report for a terminal: a block per tenant, problems indented under it. */
export function formatTenantsReport(report: TenantsReport): string {
  const lines: string[] = [report.dir === null ? 'tenants: from the main config' : `tenants from ${report.dir}`];
  if (report.tenants.length === 0) lines.push('  no tenant files');
  for (const row of report.tenants) {
    lines.push(`  ${row.name}  ${row.valid ? 'valid' : 'INVALID'}  ${row.source}`);
    if (row.keyFingerprint !== null) lines.push(`    key: sha256 ${row.keyFingerprint}`);
    if (row.sinks.length > 0) lines.push(`    sinks: ${row.sinks.map((s) => `${s.name} (${s.type})`).join(', ')}`);
    if (row.watch !== null) lines.push(`    watch: ${describeWatch(row.watch)}`);
    if (row.lease)
      lines.push(
        row.lease.holder === null
          ? '    lease: free (the next lease round of a replica takes it)'
          : `    lease: held by ${row.lease.holder} (epoch ${row.lease.epoch}, expires in ${row.lease.expiresInSeconds} s)`,
      );
    for (const problem of row.problems) lines.push(...indented(`${problem.code}: ${problem.message}`, '    '));
  }
  for (const problem of report.problems) lines.push(...indented(`${problem.code}: ${problem.message}`, '  '));
  return lines.map(terminalSafe).join('\n');
}

function describeWatch(watch: NonNullable<TenantRow['watch']>): string {
  const set = (label: string, s: { ids: number; discover: boolean }): string => {
    const ids = s.ids === 1 ? '1 id' : `${s.ids} ids`;
    return `${label} ${s.discover ? `${ids} + discovery` : ids}`;
  };
  return [
    set('careers', watch.careers),
    set('skills', watch.skills),
    `identity-provider log ${watch.identityProviderEvents ? 'on' : 'off'}`,
    `from ${watch.startFrom}`,
    `each log at most every ${watch.pollIntervalSeconds} s`,
  ].join('; ');
}

function indented(text: string, prefix: string): string[] {
  return text.split('\n').map((line) => `${prefix}${line}`);
}
