import { InvalidArgumentError } from 'commander';
import ms from 'ms';

export interface NumberRule {
  /** Smallest accepted value (inclusive). */
  min: number;
  /** Largest accepted value (inclusive). */
  max: number;
  /** Whole numbers only (ports, counts, seeds). */
  integer?: boolean;
}

export const PORT: NumberRule = { min: 0, max: 65_535, integer: true };
export const SEED: NumberRule = { min: 0, max: 2 ** 31 - 1, integer: true };

/**
 * A commander argument parser for a number within `rule`. `Number()` alone accepts "" (0),
 * "0x10" and "1e3" and turns "abc" into NaN, which then flows on silently (a NaN shutdown
 * timeout exited at once without draining). Commander names the flag in its message.
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

/**
 * A point in time given as an ISO 8601 timestamp or as an age (`1h` = one hour before `now`),
 * in epoch milliseconds; undefined when it is neither.
 */
export function parseTimeOrAge(text: string, now: number): number | undefined {
  const age = parseDuration(text);
  // An age beyond the range of a Date (99999999999d) is no time: it would reach the store as a
  // number no engine can hold or turn back into a date.
  if (age !== undefined) return Number.isNaN(new Date(now - age).getTime()) ? undefined : now - age;
  // Date.parse also reads "1" or "March 7" in the local zone; an ISO 8601 time starts with its year.
  if (!/^\d{4}-\d{2}-\d{2}/.test(text.trim())) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : at;
}

/** A commander argument parser for a time: an ISO 8601 timestamp or an age such as 30m, 1h, 7d. */
export function timeOrAge(now: () => number = Date.now): (raw: string) => number {
  return (raw) => {
    const at = parseTimeOrAge(raw, now());
    if (at === undefined)
      throw new InvalidArgumentError(
        `expected an ISO 8601 time (2026-11-20T00:00:00Z) or an age such as 90s, 30m, 1h or 7d, got "${raw}"`,
      );
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
