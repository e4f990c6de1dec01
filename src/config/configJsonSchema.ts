import { z } from 'zod';
import { isPlainObject, stepInto } from './configPath.js';

export type JsonSchema = z.core.JSONSchema.JSONSchema;

// Each schema is converted once: the conversion is pure but costs milliseconds, paid for every
// tenant file at every rescan otherwise (docs/scaling.md). Callers only read the result.
const converted = new WeakMap<z.ZodType, JsonSchema | undefined>();

/**
 * The JSON Schema of what a config file may contain (zod's "input" view: defaults shown,
 * defaulted fields optional). Loading, error formatting and the reference generator all read
 * the schema through this, so none of them depends on zod's internals.
 *
 * Returns undefined for a schema zod cannot express; callers then fall back to what they can
 * tell from the value alone (e.g. secret detection by key name).
 */
export function toConfigJsonSchema(schema: z.ZodType): JsonSchema | undefined {
  if (converted.has(schema)) return converted.get(schema);
  let json: JsonSchema | undefined;
  try {
    json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  } catch {
    json = undefined;
  }
  converted.set(schema, json);
  return json;
}

function asSchema(value: unknown): JsonSchema | undefined {
  return isPlainObject(value) ? value : undefined;
}

// zod inlines every schema it meets again ("reused: inline"), so without recursive or registered
// schemas, which the config has none of, its output holds no `$ref` to follow.

/**
 * The concrete alternatives a schema stands for: unions flattened. When `value` is an object,
 * union members whose `const` properties contradict it are dropped, which picks the right
 * variant of a `type`-tagged union; if none matches, all are kept.
 */
export function alternatives(schema: JsonSchema, value?: unknown): JsonSchema[] {
  const branches = [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])];
  if (branches.length === 0) return [schema];
  const out: JsonSchema[] = [];
  if (schema.type !== undefined || schema.properties !== undefined) out.push(schema);
  const flat = branches.flatMap((branch) => alternatives(branch, value));
  const matching = flat.filter((branch) => matchesDiscriminators(branch, value));
  out.push(...(matching.length > 0 ? matching : flat));
  return out;
}

function matchesDiscriminators(branch: JsonSchema, value: unknown): boolean {
  if (!isPlainObject(value) || !branch.properties) return true;
  for (const [key, property] of Object.entries(branch.properties)) {
    const tag = asSchema(property)?.const;
    if (tag !== undefined && value[key] !== undefined && value[key] !== tag) return false;
  }
  return true;
}

/** The schemas that apply one step below `schema`, at object key or array index `segment`. */
export function childSchemas(schema: JsonSchema, segment: PropertyKey, value?: unknown): JsonSchema[] {
  return alternatives(schema, value).flatMap((alt) => {
    let child: JsonSchema | undefined;
    if (typeof segment === 'number') child = asSchema(alt.items);
    else if (typeof segment === 'string') {
      const own = alt.properties && Object.hasOwn(alt.properties, segment) ? alt.properties[segment] : undefined;
      child = asSchema(own) ?? asSchema(alt.additionalProperties);
    }
    return child ? [child] : [];
  });
}

/** The keys an object at `path` accepts, for "did you mean" suggestions; guided by the config value. */
export function knownKeysAtPath(root: JsonSchema, path: readonly PropertyKey[], rootValue?: unknown): string[] {
  let schemas: JsonSchema[] = [root];
  let value = rootValue;
  for (const segment of path) {
    schemas = schemas.flatMap((schema) => childSchemas(schema, segment, value));
    value = stepInto(value, segment);
  }
  const keys = schemas.flatMap((schema) => alternatives(schema, value)).flatMap((s) => Object.keys(s.properties ?? {}));
  return [...new Set(keys)];
}
