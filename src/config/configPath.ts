import { ConfigError } from '../errors.js';

/** One step into a config tree: an object key or an array index. */
export type PathSegment = string | number;

const IDENTIFIER = /^[A-Za-z_$][\w$-]*$/;

/**
 * `['sinks', 1, 'path']` -> `sinks[1].path`: the form operators see in errors and in the
 * configuration reference. Keys that would be ambiguous after a dot are bracket-quoted.
 */
export function formatConfigPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && IDENTIFIER.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out === '' ? '(root)' : out;
}

/** `api.baseUrl` -> `['api', 'baseUrl']`; `label` says where the path came from, for the error. */
export function parseDottedPath(dotted: string, label: string): string[] {
  const segments = dotted.split('.');
  if (segments.some((s) => s.trim() === '')) {
    throw new ConfigError(`${label}: "${dotted}" is not a dotted config path like "api.baseUrl"`, [
      { path: dotted, message: 'not a dotted config path' },
    ]);
  }
  return segments;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** The value one step below `value`, or undefined when there is none. */
export function stepInto(value: unknown, segment: PropertyKey): unknown {
  if (Array.isArray(value) && typeof segment === 'number') return value[segment];
  if (isPlainObject(value) && typeof segment === 'string' && Object.hasOwn(value, segment)) return value[segment];
  return undefined;
}

export function getAtPath(root: unknown, path: readonly PropertyKey[]): unknown {
  return path.reduce<unknown>((node, segment) => stepInto(node, segment), root);
}

/**
 * Assigns an own property even when the key is `__proto__`, which plain assignment would turn
 * into a prototype change (YAML and env input are untrusted text).
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Builds the nested object `{ a: { b: value } }` for the path `['a', 'b']`. */
export function objectAtPath(path: readonly string[], value: unknown): Record<string, unknown> {
  const [head, ...rest] = path;
  if (head === undefined) throw new Error('objectAtPath needs a non-empty path');
  const out: Record<string, unknown> = {};
  setOwn(out, head, rest.length === 0 ? value : objectAtPath(rest, value));
  return out;
}
