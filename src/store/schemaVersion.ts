import { ChangefeedError } from '../errors.js';

/**
 * The schema version of release 1.0.0, on both engines: a new store is created whole at this
 * version from its engine's `BASELINE` (sqlite/migrations.ts, postgres/migrations.ts), and each
 * entry of that engine's `MIGRATIONS` list after it is version 101, 102, ... A store records its
 * version in `PRAGMA user_version` (SQLite) or the rows of `schema_migrations` (PostgreSQL).
 *
 * Versions 1 to 99 were development builds' before 1.0.0, never released: their stores are
 * refused, never taken for a release's (docs/operations.md, "Schema changes").
 */
export const BASELINE_VERSION = 100;

/** What opening a store of schema version `found` does. */
export type SchemaStep =
  /** A new store (version 0): create the baseline, then apply every migration. */
  | { action: 'create' }
  /** Apply the migrations from `MIGRATIONS[index]` on. */
  | { action: 'migrate'; index: number }
  | { action: 'current' }
  | { action: 'newer' }
  | { action: 'prerelease' }
  /** A version no build writes (below 0, or not a whole number): not a store of ours, or damaged. */
  | { action: 'unknown' };

/** The version this build's schema is at, with `migrations` entries after the baseline. */
export function latestSchemaVersion(migrations: number): number {
  return BASELINE_VERSION + migrations;
}

/** The step from a store's recorded version to this build's, which has `migrations` after the baseline. */
export function schemaStep(found: number, migrations: number): SchemaStep {
  const latest = latestSchemaVersion(migrations);
  if (!Number.isSafeInteger(found) || found < 0) return { action: 'unknown' };
  if (found === 0) return { action: 'create' };
  if (found > latest) return { action: 'newer' };
  if (found === latest) return { action: 'current' };
  if (found < BASELINE_VERSION) return { action: 'prerelease' };
  return { action: 'migrate', index: found - BASELINE_VERSION };
}

/** A store made by a development build before 1.0.0: its schema has no migration to this one. */
export class PrereleaseSchemaError extends ChangefeedError {
  constructor(
    readonly location: string,
    readonly version: number,
    /** What the operator can do, for this engine. */
    remedy: string,
  ) {
    super(
      'STORE_SCHEMA_PRERELEASE',
      `the store at ${location} has schema version ${version}, written by a development build before 1.0.0, ` +
        `which no release can migrate (release schemas start at ${BASELINE_VERSION}); ${remedy}`,
    );
  }
}

/** Why a store recording `version`, which no build writes (schemaStep's 'unknown'), is refused. */
export function unknownVersionProblem(version: number): string {
  return (
    `has schema version ${version}, which no build of changefeed writes (release schemas start at ` +
    `${BASELINE_VERSION}): it is not a changefeed store, or it is damaged`
  );
}

/**
 * The tables of `expected` that `present` lacks, in `expected`'s order: a store that records a
 * version but lost tables (dropped by hand, a partial restore) must be refused when it opens,
 * not fail on the first query that names one.
 */
export function missingTables(expected: readonly string[], present: Iterable<string>): string[] {
  const have = new Set(present);
  return expected.filter((table) => !have.has(table));
}

/** Why a store of `version` that lacks `missing` tables is refused. */
export function missingTablesProblem(version: number, missing: readonly string[]): string {
  return (
    `records schema version ${version} but lacks ${missing.length === 1 ? 'the table' : 'the tables'} ` +
    `${missing.join(', ')}: it was damaged (tables dropped by hand, a partial restore)`
  );
}
