import type { z } from 'zod';
import { getAtPath, objectAtPath, parseDottedPath } from './configPath.js';
import { coerceScalars } from './coerceScalars.js';
import { toConfigJsonSchema } from './configJsonSchema.js';
import { deepMerge } from './deepMerge.js';
import { formatConfigIssues } from './formatConfigIssues.js';
import { interpolateEnv } from './interpolateEnv.js';
import { parseConfigText, readConfigFile, type ConfigFile } from './readConfigFile.js';

export interface ConfigSources {
  /** A YAML config file. Without one, the config comes from defaults, environment and overrides. */
  file?: string;
  /**
   * The text of `file`, already read: validated instead of reading the file again (a tenant file
   * read once, or the text the store kept of it). `file` still names it in messages.
   */
  fileText?: string;
  /** Read by `envMapping` and by `${VAR}` references in the file; defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Dotted config path -> value, typically from CLI flags. `undefined` values are ignored. */
  overrides?: Record<string, unknown>;
  /** Environment variable name -> dotted config path, e.g. `{ CHANGEFEED_API_KEY: 'api.apiKey' }`. */
  envMapping?: Record<string, string>;
  /** Defaults that are not part of the schema: the main config's tenant sections, under a tenant file. */
  embeddedDefaults?: Record<string, unknown>;
  /**
   * Where a value of `embeddedDefaults` came from, phrased to follow "got X" (e.g. `at
   * /etc/changefeed.yaml:4:3`); by default `from the built-in defaults`.
   */
  describeEmbeddedDefault?: (path: readonly PropertyKey[]) => string | undefined;
  /** Top-level sections whose unset `${VAR}` references are kept as written: what the command does not read. */
  keepUnsetEnvUnder?: readonly string[];
}

interface Origin {
  readonly path: readonly string[];
  readonly label: string;
}

/**
 * Builds the configuration from its layers and validates it against `schema`, which the
 * application composes from the per-component schemas. Later layers win:
 *
 *   schema defaults < embeddedDefaults < YAML file < environment (envMapping) < overrides
 *
 * Layers merge as deepMerge says. Strings are coerced to numbers or booleans where the schema
 * expects only those (environment values are always strings). An empty environment variable
 * counts as unset: a blank `export X=` in a compose file usually means "not configured".
 *
 * Every failure is a ConfigError whose message names the setting, its source and what is
 * wrong; values of secret fields never appear in it.
 */
export function loadConfig<S extends z.ZodTypeAny>(schema: S, sources: ConfigSources): z.output<S> {
  const env = sources.env ?? process.env;
  const jsonSchema = toConfigJsonSchema(schema);

  const embedded = sources.embeddedDefaults ?? {};

  let file: ConfigFile | undefined;
  let fileValue: unknown = {};
  if (sources.file !== undefined) {
    file =
      sources.fileText === undefined ? readConfigFile(sources.file) : parseConfigText(sources.file, sources.fileText);
    fileValue = interpolateEnv(file.value, env, `config file ${file.path}`, {
      keepUnsetUnder: sources.keepUnsetEnvUnder,
    });
  }

  const origins: Origin[] = [];
  let envLayer: unknown = {};
  for (const [name, dotted] of Object.entries(sources.envMapping ?? {})) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    const path = parseDottedPath(dotted, `envMapping for ${name}`);
    envLayer = deepMerge(envLayer, objectAtPath(path, value));
    origins.push({ path, label: `from environment variable ${name}` });
  }

  let overrideLayer: unknown = {};
  for (const [dotted, value] of Object.entries(sources.overrides ?? {})) {
    if (value === undefined) continue;
    const path = parseDottedPath(dotted, 'override');
    overrideLayer = deepMerge(overrideLayer, objectAtPath(path, value));
    origins.push({ path, label: `from override ${dotted}` });
  }

  const merged = [embedded, fileValue, envLayer, overrideLayer].reduce<unknown>(deepMerge, {});
  const input = coerceScalars(jsonSchema, merged);
  const result = schema.safeParse(input);
  if (result.success) return result.data;

  const describeOrigin = (path: readonly PropertyKey[]): string | undefined => {
    // Overrides were pushed last, so searching from the end finds the layer that won.
    const winner = origins.findLast((o) => o.path.every((segment, i) => path[i] === segment));
    if (winner) return winner.label;
    if (file && (getAtPath(fileValue, path) !== undefined || getAtPath(input, path) === undefined)) {
      const at = file.locate(path);
      if (at) return `at ${file.path}:${at.line}:${at.col}`;
    }
    if (getAtPath(embedded, path) !== undefined)
      return sources.describeEmbeddedDefault?.(path) ?? 'from the built-in defaults';
    return undefined;
  };
  throw formatConfigIssues(result.error.issues, { input, jsonSchema, describeOrigin });
}
