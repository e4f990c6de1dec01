import { pino } from 'pino';
import { scrubSecrets } from '../secrets/secretRegistry.js';

const REDACTED = '[redacted]';

/** Keys whose values are credentials, in any letter case (HTTP header names are case-insensitive). */
const SENSITIVE_KEY =
  /^(authorization|proxy-authorization|x-api-key|api[-_]?key|secret|secrets|password|token|webhook-signature|cookie|set-cookie)$/i;

// Deep enough for a request/response with headers; anything deeper is left to the registered
// secret scrub rather than walked on every log call.
const MAX_DEPTH = 8;

/**
 * Returns `value` with sensitive keys replaced by `[redacted]` and registered secrets cut out
 * of every string. Copy-on-write: the caller's objects are never modified, and an object with
 * nothing to redact is returned as is. Errors found inside are serialized (and scrubbed) the
 * way the `err` serializer does it; other class instances are left to their own toJSON.
 */
export function redactLogValue(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return scrubSecrets(value);
  if (typeof value !== 'object' || value === null || depth >= MAX_DEPTH || seen.has(value)) return value;
  if (value instanceof Error) return serializeError(value);
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      const list: readonly unknown[] = value;
      let copy: unknown[] | undefined;
      list.forEach((item, index) => {
        const next = redactLogValue(item, depth + 1, seen);
        if (next !== item) (copy ??= [...list])[index] = next;
      });
      return copy ?? value;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return value;
    return redactEntries(value as Record<string, unknown>, depth, seen) ?? value;
  } finally {
    seen.delete(value);
  }
}

function redactEntries(
  value: Record<string, unknown>,
  depth: number,
  seen: WeakSet<object>,
): Record<string, unknown> | undefined {
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const item = value[key];
    const next =
      SENSITIVE_KEY.test(key) && item !== null && item !== undefined ? REDACTED : redactLogValue(item, depth + 1, seen);
    if (next !== item) {
      copy ??= { ...value };
      Object.defineProperty(copy, key, { value: next, enumerable: true, writable: true, configurable: true });
    }
  }
  return copy;
}

/**
 * The `err` serializer: pino's standard one (type, message, stack, causes, own fields), then
 * sensitive keys redacted and registered secrets scrubbed from message and stack, since an
 * HTTP client's error message can quote a URL or header that carries the key.
 */
export function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return redactLogValue(error);
  const plain = { ...(pino.stdSerializers.err(error) as unknown as Record<string, unknown>) };
  return redactEntries(plain, 0, new WeakSet()) ?? plain;
}
