import type { z } from 'zod';
import { formatConfigPath, isPlainObject } from './configPath.js';
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
 * The secret fields of `value`: the path (as formatConfigPath writes it) of every scalar in one,
 * and every non-empty string among them, so error messages can leave their values out and scrub
 * them from the text even when a custom zod message quotes the input. Everything below a secret
 * is secret too (`secrets: { a: ..., b: ... }`).
 */
export function findSecrets(root: JsonSchema | undefined, value: unknown): { paths: Set<string>; values: Set<string> } {
  const found = { paths: new Set<string>(), values: new Set<string>() };
  const walk = (node: unknown, path: PropertyKey[], schemas: JsonSchema[], secret: boolean): void => {
    const entries: [PropertyKey, unknown][] | undefined = Array.isArray(node)
      ? node.map((item, index) => [index, item])
      : isPlainObject(node)
        ? Object.entries(node)
        : undefined;
    if (entries === undefined) {
      if (secret) found.paths.add(formatConfigPath(path));
      if (secret && typeof node === 'string' && node !== '') found.values.add(node);
      return;
    }
    for (const [segment, child] of entries) {
      const below = schemas.flatMap((schema) => childSchemas(schema, segment, node));
      walk(child, [...path, segment], below, secret || isSecretKey(segment) || describedAsSecret(below, child));
    }
  };
  walk(value, [], root ? [root] : [], false);
  return found;
}

/**
 * The values of every secret field of a loaded config, for the daemon to pass to the logger's
 * `registerSecret` so they are scrubbed from logs too.
 */
export function listConfigSecrets(schema: z.ZodType, config: unknown): string[] {
  return [...findSecrets(toConfigJsonSchema(schema), config).values];
}
