import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ChangefeedError } from '../../errors.js';
import {
  BASELINE_VERSION,
  latestSchemaVersion,
  missingTables,
  missingTablesProblem,
  PrereleaseSchemaError,
  schemaStep,
  unknownVersionProblem,
} from '../schemaVersion.js';
import { OlderSchemaError, StoreError } from '../storeError.js';
import { isStorageError, StoreUnavailableError } from '../storeHealth.js';
import { STORE_FILE_NAME } from '../storeLocation.js';
import { BASELINE, MIGRATIONS, TABLES } from './migrations.js';
import { checkStoreFile, checkStoreIdentity, StoreRefusedError } from './storeIdentity.js';

export type Db = Database.Database;

export function storePath(stateDir: string): string {
  return join(stateDir, STORE_FILE_NAME);
}

/**
 * Opens (creating if needed) the store in WAL mode and migrates it. WAL lets `changefeed status`
 * read while the daemon writes; `synchronous = NORMAL` in WAL still never corrupts the file on a
 * crash and loses at most the last commits on power loss, which re-polling recovers.
 */
export function openDatabase(file: string, options: { readonly?: boolean } = {}): Db {
  const readonly = options.readonly ?? false;
  if (!readonly) mkdirSync(dirname(file), { recursive: true });
  checkStoreFile(file);
  let db: Db;
  try {
    db = new Database(file, { readonly, fileMustExist: readonly });
  } catch (error) {
    throw new StoreError(`cannot open the store at ${file}: ${(error as Error).message}`, error);
  }
  try {
    db.pragma('busy_timeout = 5000');
    checkStoreIdentity(db, file, { readonly });
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    migrate(db, file, readonly);
    if (!readonly) db.pragma('foreign_keys = ON');
    return db;
  } catch (error) {
    db.close();
    if (error instanceof ChangefeedError) throw error;
    // SQLITE_CORRUPT, SQLITE_NOTADB: a file cut short or overwritten.
    const code = (error as { code?: string }).code ?? '';
    if (/^SQLITE_(CORRUPT|NOTADB)/.test(code))
      throw new StoreRefusedError(file, `is damaged (${(error as Error).message})`, error);
    // A full or read-only disk, or a lock, met while opening, creating or migrating the store:
    // the start or the command fails, naming the file and the remedy, which SQLite's own words
    // ("database or disk is full", "unable to open database file") do not.
    if (isStorageError(error))
      throw new StoreUnavailableError(
        `the store at ${file} ${openingProblem(file, `${(error as Error).message} (${code})`, code, readonly)}`,
        error,
      );
    throw error;
  }
}

/** What kept the store from opening, after "the store at <file>", and what to do about it. */
function openingProblem(file: string, why: string, code: string, readonly: boolean): string {
  if (/^SQLITE_(BUSY|LOCKED)/.test(code))
    return (
      `is locked by another process: ${why}; try again once it lets go (look for a sqlite3 shell or a backup ` +
      'holding a transaction open)'
    );
  if (!readonly) return `cannot be written: ${why}; free space on its disk or make it writable`;
  // A reader writes nothing to the store, but SQLite reads a store in WAL mode through its -shm
  // file: created by the first to open it, kept while the daemon runs, removed when it stops.
  const shm = `${file}-shm`;
  return /^SQLITE_(FULL|IOERR)/.test(code)
    ? `cannot be read: ${why}; reading it creates ${shm} while no daemon runs on it: free space on its disk`
    : `cannot be read: ${why}; reading it creates ${shm} while no daemon runs on it, which cannot be done ` +
        'here (a read-only disk, or a directory this user cannot write): run the command while the daemon runs, ' +
        "or as the daemon's user, or make the directory writable";
}

/** Brings the store to this build's schema; a reader, which cannot migrate, only checks it is there. */
function migrate(db: Db, file: string, readonly: boolean): void {
  const found = db.pragma('user_version', { simple: true }) as number;
  const step = schemaStep(found, MIGRATIONS.length);
  const latest = latestSchemaVersion(MIGRATIONS.length);
  if (step.action === 'current') return checkTables(db, file, found);
  if (step.action === 'newer')
    throw new StoreError(
      `the store at ${file} has schema version ${found}, newer than this build knows (${latest}); upgrade changefeed`,
    );
  if (step.action === 'prerelease')
    throw new PrereleaseSchemaError(
      file,
      found,
      'keep running the build that made it, or start afresh with `changefeed run --reset-store` (the file is ' +
        `kept as ${file}.reset-<time>; every sink then starts from now and logs from watch.startFrom)`,
    );
  if (step.action === 'unknown') throw new StoreRefusedError(file, unknownVersionProblem(found));
  // Refused by name rather than failing on the first query that names a newer column.
  if (readonly)
    throw new OlderSchemaError(
      `the store at ${file} has schema version ${found}, older than this build's (${latest}); start the daemon ` +
        'of this build once, which migrates it, then run this command again',
    );
  if (step.action === 'create')
    db.transaction(() => {
      db.exec(BASELINE);
      db.pragma(`user_version = ${BASELINE_VERSION}`);
    })();
  // Off while a migration rebuilds a table, as SQLite's recipe for changes ALTER TABLE cannot make
  // asks (https://sqlite.org/lang_altertable.html); each migration checks the keys before it commits.
  db.pragma('foreign_keys = OFF');
  for (let index = step.action === 'create' ? 0 : step.index; index < MIGRATIONS.length; index++) {
    const version = BASELINE_VERSION + index + 1;
    db.transaction(() => {
      db.exec(MIGRATIONS[index] ?? '');
      const broken = db.pragma('foreign_key_check') as { table: string; parent: string }[];
      if (broken.length > 0) {
        const tables = new Map<string, number>();
        for (const { table, parent } of broken) {
          const key = `${table} (parent ${parent})`;
          tables.set(key, (tables.get(key) ?? 0) + 1);
        }
        throw new StoreError(
          `migrating the store at ${file} to schema version ${version} left ${broken.length} rows without ` +
            `their parent: ${[...tables].map(([table, n]) => `${n} in ${table}`).join(', ')} (rows written with ` +
            'foreign keys off, as by the sqlite3 shell; PRAGMA foreign_key_check lists them); nothing was changed',
        );
      }
      db.pragma(`user_version = ${version}`);
    })();
  }
}

/** A store at this build's version must hold this build's tables (schemaVersion.ts, missingTables). */
function checkTables(db: Db, file: string, version: number): void {
  const present = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  const missing = missingTables(TABLES, present);
  if (missing.length > 0) throw new StoreRefusedError(file, missingTablesProblem(version, missing));
}
