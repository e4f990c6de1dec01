import type { z } from 'zod';
import { isPlainObject, stepInto } from './configPath.js';
import { alternatives, childSchemas, toConfigJsonSchema, type JsonSchema } from './configJsonSchema.js';

// Matched case-insensitively: `apiKey`, `APIKEY` and `apikey` are the same promise to the operator.
const SECRET_KEY_NAMES = new Set(['apikey', 'secret', 'secrets', 'password', 'token']);

/** A field is secret by name, or because its schema description starts with `Secret:`. */
function isSecretKey(key: PropertyKey): boolean {
  return typeof key === 'string' && SECRET_KEY_NAMES.has(key.toLowerCase());
}

function describedAsSecret(schemas: readonly JsonSchema[], value: unknown): boolean {
  const secret = (schema: JsonSchema): boolean => schema.description?.trimStart().startsWith('Secret:') === true;
  return schemas.some((schema) => secret(schema) || alternatives(schema, value).some(secret));
}

/**
 * Whether the value at `path` is, or sits inside, a secret field. Everything below a secret
 * is secret too (`secrets: { a: ..., b: ... }`).
 */
export function isSecretPath(root: JsonSchema | undefined, path: readonly PropertyKey[], rootValue?: unknown): boolean {
  let schemas: JsonSchema[] = root ? [root] : [];
  let value = rootValue;
  for (const segment of path) {
    if (isSecretKey(segment)) return true;
    schemas = schemas.flatMap((schema) => childSchemas(schema, segment, value));
    value = stepInto(value, segment);
    if (describedAsSecret(schemas, value)) return true;
  }
  return false;
}

/**
 * Every string in `value` that sits in a secret field, so error messages can be scrubbed of
 * them even when a custom zod message quotes the input.
 */
export function collectSecretValues(root: JsonSchema | undefined, value: unknown): Set<string> {
  const found = new Set<string>();
  const walk = (node: unknown, schemas: JsonSchema[], secret: boolean): void => {
    if (typeof node === 'string') {
      if (secret && node !== '') found.add(node);
      return;
    }
    const entries: [PropertyKey, unknown][] = Array.isArray(node)
      ? node.map((item, index) => [index, item])
      : isPlainObject(node)
        ? Object.entries(node)
        : [];
    for (const [segment, child] of entries) {
      const below = schemas.flatMap((schema) => childSchemas(schema, segment, node));
      walk(child, below, secret || isSecretKey(segment) || describedAsSecret(below, child));
    }
  };
  walk(value, root ? [root] : [], false);
  return found;
}

/**
 * The values of every secret field of a loaded config, for the daemon to pass to the logger's
 * `registerSecret` so they are scrubbed from logs too.
 */
export function listConfigSecrets(schema: z.ZodType, config: unknown): string[] {
  return [...collectSecretValues(toConfigJsonSchema(schema), config)];
}
