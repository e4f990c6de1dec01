import { closeSync, existsSync, openSync, readSync, renameSync, statSync } from 'node:fs';
import { ChangefeedError } from '../../errors.js';
import type { Db } from './database.js';

/** `PRAGMA application_id` of our stores: "CFED". Marks a file as a changefeed store. */
export const STORE_APPLICATION_ID = 0x43464544;

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');
const SUFFIXES = ['', '-wal', '-shm'];

/** A store file that is not one we can trust: empty, truncated, corrupt or someone else's. */
export class StoreRefusedError extends ChangefeedError {
  constructor(
    file: string,
    /** What is wrong with the file, as "is empty (0 bytes)…". */
    readonly problem: string,
    cause?: unknown,
  ) {
    super(
      'STORE_REFUSED',
      `the store ${file} ${problem}; refusing to use it, since starting afresh would deliver ` +
        `every event again. Restore it from a backup, point stateDir elsewhere, or start ` +
        `over with \`changefeed run --reset-store\` (it is kept as ${file}.reset-<time>)`,
      { cause },
    );
  }
}

/**
 * Before SQLite opens it: a file that exists must look like a SQLite database. An emptied store
 * taken as new would silently re-deliver everything from watch.startFrom.
 */
export function checkStoreFile(file: string): void {
  if (!existsSync(file)) return;
  const size = statSync(file).size;
  if (size === 0) throw new StoreRefusedError(file, 'is empty (0 bytes): it was truncated or replaced');
  const header = Buffer.alloc(SQLITE_HEADER.length);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  if (!header.equals(SQLITE_HEADER))
    throw new StoreRefusedError(file, 'is not a SQLite database (its header is wrong)');
}

/**
 * Once opened: a store with our schema carries our application id (a new one gets it here); a
 * database with tables but another id is not ours. A quick_check finds a file cut short.
 */
export function checkStoreIdentity(db: Db, file: string, options: { readonly: boolean }): void {
  const id = db.pragma('application_id', { simple: true }) as number;
  const version = db.pragma('user_version', { simple: true }) as number;
  const tables = (db.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n;
  if (id !== STORE_APPLICATION_ID && id !== 0)
    throw new StoreRefusedError(file, `belongs to another application (application_id ${id})`);
  if (id === 0 && tables > 0 && version === 0)
    throw new StoreRefusedError(
      file,
      'is a SQLite database of another application (it has tables but no changefeed schema)',
    );
  // Readers (status, plan) trust what the daemon checked at its start, and cannot write the id.
  if (options.readonly) return;
  const check = db.pragma('quick_check', { simple: true }) as string;
  if (check !== 'ok') throw new StoreRefusedError(file, `is damaged (quick_check: ${check})`);
  if (id === 0) db.pragma(`application_id = ${STORE_APPLICATION_ID}`);
}

/** `run --reset-store`: moves the store (and its WAL files) aside, keeping it; returns where. */
export function setStoreAside(file: string, now: number): string | undefined {
  if (!existsSync(file)) return undefined;
  const aside = `${file}.reset-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
  for (const suffix of SUFFIXES)
    if (existsSync(`${file}${suffix}`)) renameSync(`${file}${suffix}`, `${aside}${suffix}`);
  return aside;
}
