import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ChangefeedError } from '../../errors.js';
import { MIGRATIONS } from './migrations.js';
import { checkStoreFile, checkStoreIdentity, StoreRefusedError } from './storeIdentity.js';

export type Db = Database.Database;

export const STORE_FILE_NAME = 'changefeed.sqlite';

export class StoreError extends ChangefeedError {
  constructor(message: string, cause?: unknown) {
    super('STORE_ERROR', message, { cause });
  }
}

export function storePath(stateDir: string): string {
  return join(stateDir, STORE_FILE_NAME);
}

/**
 * Opens (creating if needed) the store in WAL mode and migrates it. WAL lets `changefeed status`
 * read while the daemon writes; `synchronous = NORMAL` in WAL still never corrupts the file on a
 * crash and loses at most the last commits on power loss, which re-polling recovers.
 */
export function openDatabase(file: string, options: { readonly?: boolean; cacheKiB?: number } = {}): Db {
  if (!options.readonly) mkdirSync(dirname(file), { recursive: true });
  checkStoreFile(file);
  let db: Db;
  try {
    db = new Database(file, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (error) {
    throw new StoreError(`cannot open the store at ${file}: ${(error as Error).message}`, error);
  }
  try {
    db.pragma('busy_timeout = 5000');
    // A negative cache_size is in KiB; better-sqlite3's build default is 16 MB (storeLocation.ts).
    if (options.cacheKiB !== undefined) db.pragma(`cache_size = -${Math.max(64, Math.floor(options.cacheKiB))}`);
    checkStoreIdentity(db, file, { readonly: options.readonly ?? false });
    if (options.readonly) return db;
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db, file);
    return db;
  } catch (error) {
    db.close();
    if (error instanceof ChangefeedError) throw error;
    // SQLITE_CORRUPT, SQLITE_NOTADB: a file cut short or overwritten.
    if (/^SQLITE_(CORRUPT|NOTADB)/.test((error as { code?: string }).code ?? ''))
      throw new StoreRefusedError(file, `is damaged (${(error as Error).message})`, error);
    throw error;
  }
}

function migrate(db: Db, file: string): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new StoreError(
      `the store at ${file} has schema version ${current}, newer than this build knows (${MIGRATIONS.length}); upgrade changefeed`,
    );
  }
  for (let version = current; version < MIGRATIONS.length; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version] ?? '');
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
}
