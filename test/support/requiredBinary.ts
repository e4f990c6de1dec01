import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

const SEARCH = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/sbin'];

/** The binary's full path on PATH (or /usr/sbin, where Debian puts brokers), or undefined. */
export function findBinary(name: string): string | undefined {
  for (const dir of SEARCH) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** Why a test cannot run for lack of these binaries, or undefined when all are here. */
export function missingBinary(...names: string[]): string | undefined {
  const missing = names.filter((name) => findBinary(name) === undefined);
  return missing.length === 0 ? undefined : `${missing.join(', ')} not installed (.ci/run installs it with apt)`;
}

/**
 * Skips with a printed reason, or, when CI is set, fails: CI must run every test, so a missing
 * binary there is a broken setup, not a reason to skip.
 */
export function skipOrFail(what: string, reason: string | undefined): string | undefined {
  if (reason === undefined) return undefined;
  if (process.env.CI) throw new Error(`${what}: ${reason} (CI is set: this test must not be skipped)`);
  console.warn(`skipping ${what}: ${reason}`);
  return reason;
}
