import type { ErrorCode } from '../errors.js';

/**
 * One company the daemon serves: its API key (one reads bucket), watch set, sinks and journal.
 * Generic over the config type so this room does not depend on `config/`, which composes it.
 */
export interface Tenant<C> {
  /** The file name without `.yaml`/`.yml`, or `default` when there is no `tenants.dir`. */
  readonly name: string;
  /** Absolute path of the tenant's file; undefined for `default`, built from the main config. */
  readonly file: string | undefined;
  /** The resolved config: the main file's tenant sections with the tenant file merged over them. */
  readonly config: C;
  /**
   * sha256 of the API key (or of the key file's content), hex: tells keys apart without
   * holding them. Show only its first characters (`shortFingerprint`).
   */
  readonly keyFingerprint: string;
}

/** The codes a tenant problem carries; each is documented in docs/operations.md. */
export type TenantProblemCode = Extract<
  ErrorCode,
  | 'CONFIG_INVALID'
  | 'TENANT_NAME_INVALID'
  | 'TENANT_DUPLICATE_API_KEY'
  | 'TENANT_KEY_OF_REMOVED_TENANT'
  | 'TENANTS_DIR_UNREADABLE'
  | 'TENANTS_DIR_EMPTY'
  | 'TENANT_FILE_DIFFERS'
>;

/** Something wrong with the tenants directory or one tenant file. Never holds a key. */
export interface TenantProblem {
  readonly code: TenantProblemCode;
  /** The tenant concerned; undefined for a problem of the directory itself. */
  readonly tenant: string | undefined;
  /** The file (or directory) concerned. */
  readonly file: string;
  /** Written for the operator: what is wrong, where, and what happens meanwhile. */
  readonly message: string;
  /** Each offending setting of an invalid file, e.g. `{ path: 'sinks[0].path', message: '...' }`. */
  readonly issues: readonly { readonly path: string; readonly message: string }[];
}

/** The tenants that run, sorted by name, and every problem found while reading them. */
export interface TenantSet<C> {
  readonly tenants: readonly Tenant<C>[];
  readonly problems: readonly TenantProblem[];
}

/**
 * A tenant file as read from the directory: either a candidate tenant, with the text it was
 * validated from, or the problem that stops it.
 */
export type ScannedTenant<C> =
  | { readonly ok: true; readonly tenant: Tenant<C>; readonly fileText: string }
  | { readonly ok: false; readonly name: string; readonly problem: TenantProblem };

/** The tenant built from the main config when `tenants.dir` is not set. */
export const DEFAULT_TENANT = 'default';

/** The first 12 hex digits of a key fingerprint: enough to tell keys apart in a message. */
export function shortFingerprint(fingerprint: string): string {
  return fingerprint.slice(0, 12);
}

/**
 * What the store shared by the replicas keeps of a tenant whose file validated once: which API
 * key it owns, and the file's text as it last validated. Every replica decides the tenants from
 * the files it sees and these records (settleTenants), so the decision never depends on what a
 * replica happened to read before. The text is kept as written: `${VAR}` references unresolved,
 * an `api.apiKeyFile` named, not read.
 */
export interface TenantRecord {
  readonly tenant: string;
  /** sha256 of the key the tenant owns; one record per key (`Tenant.keyFingerprint`). */
  readonly keyFingerprint: string;
  /** The tenant file's text that last validated. */
  readonly fileText: string;
  /**
   * How long its file has been missing from the directory, on the store's clock, since the first
   * read that missed it; undefined while the file is there. The record is forgotten only once this
   * reaches `tenants.forgetAfterSeconds` (settleTenants).
   */
  readonly missingForMs?: number | undefined;
}

/**
 * What a settlement writes back: records to insert or replace (which also says their file is
 * there again), tenants whose file a read missed for the first time (their `missingForMs` starts
 * at 0 on the store's clock), and tenants whose record goes.
 */
export interface TenantRecordChanges {
  readonly put: readonly TenantRecord[];
  readonly markMissing: readonly string[];
  readonly remove: readonly string[];
}

/**
 * Where the records live: the shared PostgreSQL store or the SQLite store. `settle` reads
 * them, lets `decide` answer from them, and writes its changes, atomically: two replicas settling
 * at once are serialised, and the second decides from what the first wrote.
 */
export interface TenantRecords {
  settle<T>(decide: (records: readonly TenantRecord[]) => { result: T; changes: TenantRecordChanges }): Promise<T>;
  /** The records as they are, for `changefeed tenants list`. */
  read(): Promise<readonly TenantRecord[]>;
}

export function noRecordChanges(changes: TenantRecordChanges): boolean {
  return changes.put.length === 0 && changes.markMissing.length === 0 && changes.remove.length === 0;
}
