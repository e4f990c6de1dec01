import { InvalidArgumentError, Option } from 'commander';
import ms from 'ms';
import { z } from 'zod';
import { LOG_KINDS, parseLogName, type LogKind } from '../logs.js';
import type { CliIo } from './cliIo.js';

/** Inclusive bounds; `integer` for whole numbers only (ports, counts, seeds). */
export interface NumberRule {
  min: number;
  max: number;
  integer?: boolean;
}

export const PORT: NumberRule = { min: 0, max: 65_535, integer: true };
export const SEED: NumberRule = { min: 0, max: 2 ** 31 - 1, integer: true };

/**
 * A commander argument parser for a number within `rule`. `Number()` alone accepts "" (0),
 * "0x10" and "1e3" and turns "abc" into a NaN that flows on silently. Commander names the flag.
 */
export function numberIn(rule: NumberRule): (raw: string) => number {
  return (raw) => {
    const text = raw.trim();
    const value = /^-?(\d+(\.\d+)?|\.\d+)$/.test(text) ? Number(text) : Number.NaN;
    const kind = rule.integer ? 'a whole number' : 'a number';
    if (!Number.isFinite(value) || (rule.integer && !Number.isInteger(value)) || value < rule.min || value > rule.max)
      throw new InvalidArgumentError(`expected ${kind} from ${rule.min} to ${rule.max}, got "${raw}"`);
    return value;
  };
}

/** A duration such as 90s, 30m, 1h, 7d or "2 days" in milliseconds; undefined for anything else. */
export function parseDuration(text: string): number | undefined {
  // A bare number is refused: whether "30" means seconds, minutes or milliseconds is a guess.
  if (!/^\d+(\.\d+)?\s*[a-z]+$/i.test(text.trim())) return undefined;
  const value = ms(text.trim() as ms.StringValue) as number | undefined;
  return value === undefined || !Number.isFinite(value) ? undefined : value;
}

// RFC 3339 as zod reads it: seconds required, a `Z` or `±HH:MM` offset required, and the day checked
// against its month. Date.parse alone reads "2026-01-01 12:00" in the local zone and rolls
// 2026-02-30 over to March 2.
const INSTANT = z.union([z.iso.datetime({ offset: true }), z.iso.date()]);

/** The forms a time on the command line may take, for help texts and refusals. */
const TIME_FORMS =
  'an ISO 8601 time with its zone as RFC 3339 writes it (2026-11-20T08:30:00Z, 2026-11-20T09:30:00+01:00), ' +
  'a date for its midnight UTC (2026-11-20), or an age such as 90s, 30m, 1h or 7d';

/**
 * A point in time given as an RFC 3339 timestamp with `Z` or an offset, as a plain date (midnight
 * UTC), or as an age (`1h` = one hour before `now`), in epoch milliseconds; undefined for anything
 * else, including a time without a zone and a day its month does not have.
 */
export function parseTimeOrAge(text: string, now: number): number | undefined {
  const age = parseDuration(text);
  // An age beyond the range of a Date (99999999999d) is no time: it would reach the store as a
  // number no engine can hold or turn back into a date.
  if (age !== undefined) return Number.isNaN(new Date(now - age).getTime()) ? undefined : now - age;
  const instant = INSTANT.safeParse(text.trim());
  if (!instant.success) return undefined;
  // A date alone is UTC midnight in Date.parse, which is what is documented.
  const at = Date.parse(instant.data);
  return Number.isNaN(at) ? undefined : at;
}

/** A commander argument parser for a time (see `TIME_FORMS`); commander names the flag. */
export function timeOrAge(now: () => number = Date.now): (raw: string) => number {
  return (raw) => {
    const at = parseTimeOrAge(raw, now());
    if (at === undefined) throw new InvalidArgumentError(`expected ${TIME_FORMS}, got "${raw}"`);
    return at;
  };
}

/**
 * A commander argument parser for a length of time given in seconds (`20`) or with a unit
 * (`90s`, `2m`), within `maxSeconds`; in milliseconds.
 */
export function secondsOrDuration(maxSeconds: number): (raw: string) => number {
  const seconds = numberIn({ min: 0, max: maxSeconds });
  return (raw) => {
    const duration = parseDuration(raw);
    if (duration !== undefined && duration <= maxSeconds * 1000) return duration;
    try {
      return seconds(raw) * 1000;
    } catch {
      throw new InvalidArgumentError(
        `expected seconds (20) or a duration such as 90s or 2m, at most ${maxSeconds} s, got "${raw}"`,
      );
    }
  };
}

/**
 * `--log`: a log's name (`career`, `skill`, `identity_provider`), or a deprecated spelling, which
 * is taken with a note on stderr saying what to write instead. Anything else is a usage error
 * (exit 2) naming the accepted values.
 */
export function logOption(description: string, io: CliIo): Option {
  return new Option('--log <kind>', `${description}: ${LOG_KINDS.join(', ')}`).argParser((raw): LogKind => {
    const named = parseLogName(raw);
    if (!named) throw new InvalidArgumentError(`expected one of ${LOG_KINDS.join(', ')}, got "${raw}"`);
    if (named.deprecated) io.stderr.write(`changefeed: --log: ${named.deprecated}\n`);
    return named.kind;
  });
}
