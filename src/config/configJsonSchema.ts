import { z } from 'zod';
import { isPlainObject, stepInto } from './configPath.js';

export type JsonSchema = z.core.JSONSchema.JSONSchema;

/**
 * Each schema is converted once: the conversion is pure and takes about 6 ms for the tenant
 * schema, which loading a tenant file paid twice (validation, then finding its secrets). A daemon
 * of 1,000 tenants rescanning its directory every 5 s spent over a core on it alone
 * (docs/scaling.md). Callers only read the result.
 */
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

/** Follows local `$ref`s (`#`, `#/$defs/name`), which zod emits for recursive or registered schemas. */
export function resolveRef(root: JsonSchema, schema: JsonSchema): JsonSchema {
  let current = schema;
  for (let hops = 0; typeof current.$ref === 'string' && hops < 32; hops++) {
    const ref = current.$ref;
    if (ref === '#') return root;
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
    const defs = match ? asSchema(root[match[1] ?? '']) : undefined;
    const target = match && defs ? asSchema(defs[decodeURIComponent(match[2] ?? '')]) : undefined;
    if (!target) return current;
    current = target;
  }
  return current;
}

/**
 * The concrete alternatives a schema stands for: unions and `allOf` flattened, refs resolved.
 * When `value` is an object, union members whose `const` properties contradict it are dropped,
 * which picks the right variant of a `type`-tagged union; if none matches, all are kept.
 */
export function alternatives(root: JsonSchema, schema: JsonSchema, value?: unknown): JsonSchema[] {
  const resolved = resolveRef(root, schema);
  const branches = [...(resolved.anyOf ?? []), ...(resolved.oneOf ?? [])];
  const parts = resolved.allOf ?? [];
  if (branches.length === 0 && parts.length === 0) return [resolved];

  const out: JsonSchema[] = [];
  if (resolved.type !== undefined || resolved.properties !== undefined) out.push(resolved);
  for (const part of parts) out.push(...alternatives(root, part, value));
  const flat = branches.flatMap((branch) => alternatives(root, branch, value));
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
export function childSchemas(
  root: JsonSchema,
  schema: JsonSchema,
  segment: PropertyKey,
  value?: unknown,
): JsonSchema[] {
  const out: JsonSchema[] = [];
  for (const alt of alternatives(root, schema, value)) {
    if (typeof segment === 'number') {
      const prefix = alt.prefixItems?.[segment];
      const items = prefix ?? (Array.isArray(alt.items) ? alt.items[segment] : alt.items);
      const item = asSchema(items);
      if (item) out.push(item);
    } else if (typeof segment === 'string') {
      const property =
        alt.properties && Object.hasOwn(alt.properties, segment) ? asSchema(alt.properties[segment]) : undefined;
      const extra = property ?? asSchema(alt.additionalProperties);
      if (extra) out.push(extra);
    }
  }
  return out;
}

/** Every schema that could apply at `path`, guided by the actual config value where it exists. */
export function schemasAtPath(root: JsonSchema, path: readonly PropertyKey[], rootValue?: unknown): JsonSchema[] {
  let schemas: JsonSchema[] = [root];
  let value = rootValue;
  for (const segment of path) {
    schemas = schemas.flatMap((schema) => childSchemas(root, schema, segment, value));
    value = stepInto(value, segment);
  }
  return schemas.flatMap((schema) => alternatives(root, schema, value));
}

/** The keys an object at `path` accepts, for "did you mean" suggestions. */
export function knownKeysAtPath(root: JsonSchema, path: readonly PropertyKey[], rootValue?: unknown): string[] {
  const keys = new Set<string>();
  for (const schema of schemasAtPath(root, path, rootValue)) {
    for (const key of Object.keys(schema.properties ?? {})) keys.add(key);
  }
  return [...keys];
}
