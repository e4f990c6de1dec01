import { readdirSync, statSync, type Stats } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TenantProblem } from './tenant.js';

/**
 * Tenant names: lowercase letters, digits, `-` and `_`, starting with a letter or digit, at most
 * 63 characters. Lowercase only, because names become store keys and metric labels, and on a
 * case-insensitive file system `Acme.yaml` and `acme.yaml` would be one file.
 */
export const TENANT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

const EXTENSION = /\.ya?ml$/;

const LIST_ERROR_REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'it does not exist',
  ENOTDIR: 'it is not a directory',
  EACCES: 'permission denied',
};

/**
 * The coarsest timestamp step of the file systems a tenants directory sits on (FAT's 2 s; a
 * network file system's clock may also lag): a file changed less than this before it was listed
 * may be rewritten, at its size, without its times moving.
 */
const FILE_TIME_RESOLUTION_MS = 2000;

/** One `<name>.yaml` (or `.yml`) file of the tenants directory. */
export interface TenantFile {
  readonly name: string;
  /** Absolute path. */
  readonly path: string;
  /**
   * The file as its stat (through links) showed it: device, inode, size, modification and change
   * times. A rewrite, a rename over it or a ConfigMap's swap of the link's target changes it.
   */
  readonly signature: string;
  /**
   * Its last change was at least FILE_TIME_RESOLUTION_MS before it was listed: any later change
   * moves its times, so an equal signature next time means the same text.
   */
  readonly settled: boolean;
}

export type TenantDirectoryListing =
  | { readonly ok: true; readonly files: readonly TenantFile[]; readonly problems: readonly TenantProblem[] }
  | { readonly ok: false; readonly problem: TenantProblem };

/**
 * The tenant files of `dir`, sorted by name. Dotfiles and dot-directories (a ConfigMap's
 * `..data` and its timestamped folders), subdirectories, other extensions and dangling links are
 * skipped; a FIFO, socket or device with a tenant file's name is listed (its read refuses it). A file whose name is not a valid tenant name, and two files for one name (`a.yaml`
 * and `a.yml`), are problems. A directory that cannot be listed is reported, not thrown.
 * `listedAt` (wall-clock ms, as file times are) tells which files have settled.
 */
export function listTenantFiles(dir: string, listedAt = Date.now()): TenantDirectoryListing {
  const root = resolve(dir);
  let names: string[];
  try {
    names = readdirSync(root);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    const why = LIST_ERROR_REASONS[code] ?? code;
    const message =
      `cannot read the tenants directory ${root}: ${why}; the tenants already running keep ` +
      'running until it can be read again (check tenants.dir or CHANGEFEED_TENANTS_DIR and the mount)';
    return {
      ok: false,
      problem: { code: 'TENANTS_DIR_UNREADABLE', tenant: undefined, file: root, message, issues: [] },
    };
  }

  const byName = new Map<string, { path: string; stat: Stats }[]>();
  const problems: TenantProblem[] = [];
  for (const entry of names.sort()) {
    if (entry.startsWith('.') || !EXTENSION.test(entry)) continue;
    const path = join(root, entry);
    const stat = fileStat(path);
    if (stat === undefined) continue;
    const name = entry.replace(EXTENSION, '');
    if (!TENANT_NAME.test(name)) {
      const message =
        `tenant file ${path}: "${name}" is not a valid tenant name (lowercase letters, digits, "-" ` +
        'and "_", starting with a letter or digit, at most 63 characters); rename the file';
      problems.push({ code: 'TENANT_NAME_INVALID', tenant: undefined, file: path, message, issues: [] });
      continue;
    }
    byName.set(name, [...(byName.get(name) ?? []), { path, stat }]);
  }

  const files: TenantFile[] = [];
  for (const [name, found] of byName) {
    const [first, ...others] = found;
    if (first === undefined) continue;
    if (others.length === 0) {
      const { path, stat } = first;
      const signature = `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
      const settled = listedAt - Math.max(stat.mtimeMs, stat.ctimeMs) >= FILE_TIME_RESOLUTION_MS;
      files.push({ name, path, signature, settled });
      continue;
    }
    const paths = found.map((f) => f.path);
    for (const file of paths) {
      const message = `tenant "${name}" has two files, ${paths.join(' and ')}; keep one`;
      problems.push({ code: 'TENANT_NAME_INVALID', tenant: name, file, message, issues: [] });
    }
  }
  return { ok: true, files: files.sort((a, b) => compareNames(a.name, b.name)), problems };
}

/** Orders tenant names the same way everywhere (plain code-unit order, not the locale's). */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Follows links: a ConfigMap's `<name>.yaml` is a link into `..data`; a dangling one is skipped, as
// is a directory. A FIFO, socket or device is listed, so that its read refuses it naming the file
// (readPlainFile) and the tenant runs on its last valid text: skipped, it read as a removed tenant.
function fileStat(path: string): Stats | undefined {
  try {
    const stat = statSync(path);
    return stat.isDirectory() ? undefined : stat;
  } catch {
    return undefined;
  }
}
