import { compareNames } from './tenantDirectory.js';
import {
  shortFingerprint,
  type ScannedTenant,
  type Tenant,
  type TenantProblem,
  type TenantRecord,
  type TenantRecordChanges,
  type TenantSet,
} from './tenant.js';

/** The tenants that run, their problems, and what the records must say afterwards. */
export interface SettledTenants<C> extends TenantSet<C> {
  readonly changes: TenantRecordChanges;
  /**
   * Every tenant the store records once `changes` are written, sorted by name: the tenants the
   * cluster knows, whichever of their files this replica sees (the lease deal compares them).
   */
  readonly recorded: readonly string[];
  /**
   * Per tenant running from its file here, that file's text, which the record holds once `changes`
   * are written, or another replica's text that this read left alone (TENANT_FILE_DIFFERS): the
   * `recordedHere` of the next read.
   */
  readonly recordedHere: ReadonlyMap<string, string>;
}

/**
 * Decides which tenants run from what the tenants directory says now (`scanned`) and the records
 * of the shared store (`records`): a function of what every replica sees, never of what one of
 * them read before, so replicas agree on the tenants and on who owns each API key (docs/tenants.md,
 * "How replicas agree on the tenants"). Pure; the watcher and `changefeed tenants list` both call
 * it. `lastValid` validates a record's stored text as the tenant's file.
 *
 * - A key has one reads bucket, so one owner: the tenant whose record holds it; else the first
 *   valid file by name claims it. Any other tenant with that key is TENANT_DUPLICATE_API_KEY.
 * - A key whose owner's file is gone while another file has it is a rename: that file is refused
 *   (TENANT_KEY_OF_REMOVED_TENANT), because the company's history is kept under the owner's name
 *   and a new name would read it all again into its sinks.
 * - A tenant whose file is invalid or refused runs on its record's text when that still
 *   validates, and is reported: a typo must not stop a company's feed on any replica.
 * - A tenant whose file is gone stops, but its record is only marked missing (on the store's
 *   clock), and goes once missing for `forgetAfterMs` with no file holding its key: a replica
 *   reading a wrongly mounted directory frees no key and loses no last valid text.
 * - A record that holds another text than this replica's file, though the file is as this replica
 *   last recorded it (`recordedHere`), was written by a replica reading another file for the tenant:
 *   TENANT_FILE_DIFFERS, and the record is left alone. Written back, the two replicas rewrote it at
 *   every read, each in turn, and nothing said that the tenant's sinks or key depended on its holder.
 */
export function settleTenants<C>(
  scanned: readonly ScannedTenant<C>[],
  records: readonly TenantRecord[],
  lastValid: (record: TenantRecord) => ScannedTenant<C>,
  forgetAfterMs: number,
  /** SettledTenants.recordedHere of this replica's previous read; none at its first. */
  recordedHere: ReadonlyMap<string, string> = new Map(),
): SettledTenants<C> {
  const nameOf = (s: ScannedTenant<C>): string => (s.ok ? s.tenant.name : s.name);
  const fileOf = new Map(scanned.map((s) => [nameOf(s), s.ok ? where(s.tenant) : s.problem.file]));
  const recordOf = new Map(records.map((r) => [r.tenant, r]));
  const ownerOf = new Map(records.map((r) => [r.keyFingerprint, r.tenant]));

  const accepted = new Map<string, Tenant<C>>();
  const claimed = new Map<string, Tenant<C>>();
  const problems: TenantProblem[] = [];
  const put: TenantRecord[] = [];
  const fileTexts = new Map<string, string>();

  // A file that cannot run as written: its record's text runs instead, if it still validates.
  const fallBack = (name: string, problem: TenantProblem): void => {
    const record = recordOf.get(name);
    const last = record === undefined ? undefined : lastValid(record);
    let outcome = 'it does not start until this is fixed';
    if (record !== undefined && last?.ok === true) {
      accepted.set(name, { ...last.tenant, keyFingerprint: record.keyFingerprint });
      outcome = 'it keeps running with its last valid configuration, kept in the store';
    } else if (record !== undefined) {
      outcome =
        'it does not start until this is fixed: its last valid configuration, kept in the store, is not valid now';
    }
    // A multi-line message lists settings; the outcome then gets a line of its own after them.
    const message = problem.message.includes('\n')
      ? `${problem.message}\n  (${outcome})`
      : `${problem.message}; ${outcome}`;
    problems.push({ ...problem, message });
  };

  for (const entry of [...scanned].sort((a, b) => compareNames(nameOf(a), nameOf(b)))) {
    if (!entry.ok) {
      fallBack(entry.name, entry.problem);
      continue;
    }
    const { tenant, fileText } = entry;
    const owner = ownerOf.get(tenant.keyFingerprint);
    if (owner !== undefined && owner !== tenant.name) {
      const ownerFile = fileOf.get(owner);
      fallBack(
        tenant.name,
        ownerFile === undefined
          ? keyOfRemovedTenant(tenant, owner, forgetAfterMs)
          : duplicateKey(tenant, owner, ownerFile, 'owns it'),
      );
      continue;
    }
    const first = owner === undefined ? claimed.get(tenant.keyFingerprint) : undefined;
    if (first !== undefined) {
      fallBack(tenant.name, duplicateKey(tenant, first.name, where(first), 'comes first by name'));
      continue;
    }
    claimed.set(tenant.keyFingerprint, tenant);
    accepted.set(tenant.name, tenant);
    fileTexts.set(tenant.name, fileText);
    const record = recordOf.get(tenant.name);
    if (
      record !== undefined &&
      record.missingForMs === undefined &&
      record.fileText !== fileText &&
      recordedHere.get(tenant.name) === fileText
    )
      problems.push(fileDiffers(tenant, record));
    else if (
      record?.keyFingerprint !== tenant.keyFingerprint ||
      record.fileText !== fileText ||
      record.missingForMs !== undefined
    )
      put.push({ tenant: tenant.name, keyFingerprint: tenant.keyFingerprint, fileText });
  }

  // A file there again, though invalid or refused: its record's mark goes, or the record would be
  // forgotten at once the next time the file goes.
  const putNames = new Set(put.map((r) => r.tenant));
  for (const record of records)
    if (record.missingForMs !== undefined && fileOf.has(record.tenant) && !putNames.has(record.tenant))
      put.push({ tenant: record.tenant, keyFingerprint: record.keyFingerprint, fileText: record.fileText });

  const keysInFiles = new Set(scanned.flatMap((s) => (s.ok ? [s.tenant.keyFingerprint] : [])));
  const gone = records.filter((r) => !fileOf.has(r.tenant));
  const markMissing = gone.filter((r) => r.missingForMs === undefined).map((r) => r.tenant);
  const remove = gone
    .filter((r) => (r.missingForMs ?? -1) >= forgetAfterMs && !keysInFiles.has(r.keyFingerprint))
    .map((r) => r.tenant);
  const removed = new Set(remove);
  const recorded = [...new Set([...records.map((r) => r.tenant), ...put.map((r) => r.tenant)])].filter(
    (name) => !removed.has(name),
  );
  const tenants = [...accepted.values()].sort((a, b) => compareNames(a.name, b.name));
  return {
    tenants,
    problems,
    recorded: recorded.sort(compareNames),
    recordedHere: fileTexts,
    changes: {
      put: put.sort((a, b) => compareNames(a.tenant, b.tenant)),
      markMissing: markMissing.sort(compareNames),
      remove: remove.sort(compareNames),
    },
  };
}

function where<C>(tenant: Tenant<C>): string {
  return tenant.file === undefined ? 'the main config' : tenant.file;
}

function duplicateKey<C>(tenant: Tenant<C>, owner: string, ownerFile: string, why: string): TenantProblem {
  const message =
    `tenant "${tenant.name}" (${where(tenant)}) has the same API key (sha256 ${shortFingerprint(tenant.keyFingerprint)}) ` +
    `as tenant "${owner}" (${ownerFile}), which ${why}; a key has one reads bucket, so give each tenant its own key`;
  return { code: 'TENANT_DUPLICATE_API_KEY', tenant: tenant.name, file: where(tenant), message, issues: [] };
}

function fileDiffers<C>(tenant: Tenant<C>, record: TenantRecord): TenantProblem {
  const key =
    record.keyFingerprint === tenant.keyFingerprint
      ? ''
      : `, with another API key (sha256 ${shortFingerprint(record.keyFingerprint)} there, ` +
        `${shortFingerprint(tenant.keyFingerprint)} here)`;
  const message =
    `tenant "${tenant.name}" (${where(tenant)}): another replica reads another file for this tenant${key}, and ` +
    `recorded it in the store since this replica recorded its own; each replica runs the tenant from its own ` +
    `file while it holds the lease, so where its events go (its sinks) and what it polls depend on which ` +
    `replica holds it. Give every replica the same tenants directory (a ConfigMap update not yet seen by ` +
    `every replica passes by itself); meanwhile this replica leaves the store's record as the other wrote it`;
  return { code: 'TENANT_FILE_DIFFERS', tenant: tenant.name, file: where(tenant), message, issues: [] };
}

function keyOfRemovedTenant<C>(tenant: Tenant<C>, owner: string, forgetAfterMs: number): TenantProblem {
  const message =
    `tenant "${tenant.name}" (${where(tenant)}) has the API key (sha256 ${shortFingerprint(tenant.keyFingerprint)}) ` +
    `of tenant "${owner}", whose file is gone; the company's history (cursors, journal, deliveries) is kept under ` +
    `"${owner}", and a new name would read all of it again into its sinks. To rename, name the file ` +
    `"${owner}.yaml" again (the tenant carries on where it was). To start "${tenant.name}" afresh from ` +
    `watch.startFrom instead, remove its file and add it again once "${owner}" is forgotten: its record goes ` +
    `when its file has been gone for tenants.forgetAfterSeconds (${Math.round(forgetAfterMs / 1000)} s) and no ` +
    `file holds its key`;
  return { code: 'TENANT_KEY_OF_REMOVED_TENANT', tenant: tenant.name, file: where(tenant), message, issues: [] };
}
