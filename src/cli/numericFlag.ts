import { ChangefeedError } from '../errors.js';

export interface NumericFlagRule {
  /** Smallest accepted value (inclusive). */
  min: number;
  /** Largest accepted value (inclusive). */
  max: number;
  /** Whole numbers only (ports, counts, seeds). */
  integer?: boolean;
}

/**
 * Reads a numeric command-line flag, or throws a USAGE error (exit 2) naming the flag, the value
 * and the accepted range. `Number()` alone accepts "" (0), "0x10" and "1e3" and turns "abc" into
 * NaN, which then flows on silently (a NaN shutdown timeout exited at once without draining).
 */
export function numericFlag(flag: string, raw: string | undefined, rule: NumericFlagRule): number | undefined {
  if (raw === undefined) return undefined;
  const text = raw.trim();
  const value = /^-?(\d+(\.\d+)?|\.\d+)$/.test(text) ? Number(text) : Number.NaN;
  const kind = rule.integer ? 'a whole number' : 'a number';
  if (!Number.isFinite(value) || (rule.integer && !Number.isInteger(value)) || value < rule.min || value > rule.max) {
    throw new ChangefeedError('USAGE', `--${flag} must be ${kind} from ${rule.min} to ${rule.max}, got "${raw}"`);
  }
  return value;
}

/** As numericFlag, for a flag that has a default: never undefined. */
export function requiredNumericFlag(flag: string, raw: string, rule: NumericFlagRule): number {
  return numericFlag(flag, raw, rule) as number;
}

export const PORT_FLAG: NumericFlagRule = { min: 0, max: 65_535, integer: true };
export const SEED_FLAG: NumericFlagRule = { min: 0, max: 2 ** 31 - 1, integer: true };
