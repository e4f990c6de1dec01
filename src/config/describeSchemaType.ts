import type { JsonSchema } from './configJsonSchema.js';

// zod adds the safe-integer bounds to every `.int()`; they say nothing to an operator.
const IMPLICIT_BOUND = Number.MAX_SAFE_INTEGER;

/**
 * A short, human-readable type for the configuration reference, e.g. `integer (> 0)`,
 * `"debug" | "info"`, `string[]`, `map<string, string>`, `string (uri) | null`.
 */
export function describeSchemaType(schema: JsonSchema): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');

  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) {
    if (branches.every(isObjectSchema)) return 'object';
    return unique(branches.map(describeSchemaType)).join(' | ');
  }
  if (Array.isArray(schema.type)) {
    return unique(schema.type.map((type) => describeSchemaType({ ...schema, type }))).join(' | ');
  }

  switch (schema.type) {
    case 'string':
      return schema.format ? `string (${schema.format})` : 'string';
    case 'integer':
    case 'number':
      return withBounds(schema.type, schema);
    case 'array': {
      const items = typeof schema.items === 'object' && !Array.isArray(schema.items) ? schema.items : undefined;
      if (!items) return 'array';
      const inner = describeSchemaType(items);
      return inner.includes(' ') ? `(${inner})[]` : `${inner}[]`;
    }
    case 'object': {
      const values = schema.additionalProperties;
      if (!schema.properties && typeof values === 'object') return `map<string, ${describeSchemaType(values)}>`;
      return 'object';
    }
    case undefined:
      return 'any';
    default:
      return schema.type;
  }
}

export function isObjectSchema(schema: JsonSchema): boolean {
  return schema.type === 'object' && schema.properties !== undefined;
}

function withBounds(type: string, schema: JsonSchema): string {
  const bounds: string[] = [];
  if (typeof schema.exclusiveMinimum === 'number') bounds.push(`> ${schema.exclusiveMinimum}`);
  else if (typeof schema.minimum === 'number' && schema.minimum !== -IMPLICIT_BOUND)
    bounds.push(`>= ${schema.minimum}`);
  if (typeof schema.exclusiveMaximum === 'number') bounds.push(`< ${schema.exclusiveMaximum}`);
  else if (typeof schema.maximum === 'number' && schema.maximum !== IMPLICIT_BOUND) bounds.push(`<= ${schema.maximum}`);
  return bounds.length > 0 ? `${type} (${bounds.join(', ')})` : type;
}

/** The default as YAML-ish inline text: `"info"`, `1000`, `[]`, `{"a":1}`. */
export function describeDefault(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** The property every variant pins to a distinct constant, e.g. `type` for the sinks. */
export function findDiscriminator(variants: readonly JsonSchema[]): string | undefined {
  const [first] = variants;
  for (const key of Object.keys(first?.properties ?? {})) {
    const values = variants.map((variant) => tagValue(variant, key));
    if (values.every((v) => v !== undefined) && new Set(values).size === values.length) return key;
  }
  return undefined;
}

export function tagValue(variant: JsonSchema, key: string): unknown {
  const property = variant.properties?.[key];
  if (typeof property !== 'object') return undefined;
  return property.const ?? (property.enum?.length === 1 ? property.enum[0] : undefined);
}

function unique(items: readonly string[]): string[] {
  return [...new Set(items)];
}
