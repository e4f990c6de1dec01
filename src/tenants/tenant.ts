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
  'CONFIG_INVALID' | 'TENANT_NAME_INVALID' | 'TENANT_DUPLICATE_API_KEY' | 'TENANTS_DIR_UNREADABLE'
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

/** A tenant file as read from the directory: either a candidate tenant or the problem that stops it. */
export type ScannedTenant<C> =
  | { readonly ok: true; readonly tenant: Tenant<C> }
  | { readonly ok: false; readonly name: string; readonly problem: TenantProblem };

/** The tenant built from the main config when `tenants.dir` is not set. */
export const DEFAULT_TENANT = 'default';

/** The first 12 hex digits of a key fingerprint: enough to tell keys apart in a message. */
export function shortFingerprint(fingerprint: string): string {
  return fingerprint.slice(0, 12);
}
