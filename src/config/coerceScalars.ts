import { isPlainObject, setOwn } from './configPath.js';
import { alternatives, childSchemas, type JsonSchema } from './configJsonSchema.js';

/**
 * Turns strings into numbers or booleans where the schema accepts only those. Environment
 * variables and `${VAR}` references always produce strings, so without this `port: ${PORT}`
 * or `CHANGEFEED_POLL_INTERVAL_MS=5000` could never validate. A string is left alone when the
 * field also accepts strings, or when it does not parse cleanly (zod then reports it).
 */
export function coerceScalars(root: JsonSchema | undefined, value: unknown): unknown {
  if (!root) return value;
  const walk = (node: unknown, schemas: JsonSchema[]): unknown => {
    if (typeof node === 'string') {
      const accepted = schemas.flatMap((s) => alternatives(s, node));
      return coerce(node, accepted);
    }
    const below = (segment: PropertyKey): JsonSchema[] => schemas.flatMap((s) => childSchemas(s, segment, node));
    if (Array.isArray(node)) return node.map((item, index) => walk(item, below(index)));
    if (isPlainObject(node)) {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(node)) setOwn(out, key, walk(item, below(key)));
      return out;
    }
    return node;
  };
  return walk(value, [root]);
}

function acceptedTypes(schema: JsonSchema): Set<string> | 'anything' {
  if (schema.const !== undefined) return new Set([typeof schema.const]);
  if (schema.enum) return new Set(schema.enum.map((v) => (v === null ? 'null' : typeof v)));
  if (schema.type === undefined) return 'anything';
  return new Set(Array.isArray(schema.type) ? schema.type : [schema.type]);
}

function coerce(text: string, schemas: JsonSchema[]): unknown {
  if (schemas.length === 0) return text;
  const accepted = new Set<string>();
  for (const schema of schemas) {
    const types = acceptedTypes(schema);
    if (types === 'anything') return text;
    for (const t of types) accepted.add(t);
  }
  if (accepted.has('string')) return text;
  const trimmed = text.trim();
  if ((accepted.has('number') || accepted.has('integer')) && /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(trimmed)) {
    return Number(trimmed);
  }
  if (accepted.has('boolean')) {
    if (/^(true|1)$/i.test(trimmed)) return true;
    if (/^(false|0)$/i.test(trimmed)) return false;
  }
  if (accepted.has('null') && trimmed === 'null') return null;
  return text;
}
