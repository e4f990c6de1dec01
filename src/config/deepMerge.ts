import { isPlainObject, setOwn } from './configPath.js';

/**
 * Layers `override` onto `base` without mutating either. Plain objects merge key by key;
 * arrays and scalars replace, because merging lists (e.g. two `sinks` lists) never does what
 * an operator means. An `undefined` in `override` leaves the base value alone, so an absent
 * CLI flag or env var does not erase a value from the file; `null` does replace.
 */
export function deepMerge(base: unknown, override: unknown): unknown {
  if (override === undefined) return base;
  if (!isPlainObject(base) || !isPlainObject(override)) return override;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base)) setOwn(out, key, value);
  for (const [key, value] of Object.entries(override)) {
    if (value === undefined) continue;
    setOwn(out, key, Object.hasOwn(out, key) ? deepMerge(out[key], value) : value);
  }
  return out;
}
