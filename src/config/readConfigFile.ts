import { resolve } from 'node:path';
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Node as YamlNode } from 'yaml';
import { ConfigError } from '../errors.js';
import { CONFIG_FILE_MAX_BYTES, PlainFileError, readPlainFile } from '../readPlainFile.js';
import { isPlainObject } from './configPath.js';

export interface SourcePosition {
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly col: number;
}

/** A parsed YAML config file, before `${VAR}` interpolation. */
export interface ConfigFile {
  /** Absolute path, as shown in errors. */
  readonly path: string;
  readonly value: Record<string, unknown>;
  /**
   * Where the value at `path` is written (its key, for mapping entries), or the nearest
   * ancestor that is in the file when the value itself is missing. Lets validation errors
   * point at a line.
   */
  locate(path: readonly PropertyKey[]): SourcePosition | undefined;
}

/**
 * Reads and parses a YAML config file (a plain file of at most CONFIG_FILE_MAX_BYTES: see
 * readPlainFile). Syntax errors name the file, line and column but never quote the offending
 * line: it may hold a secret.
 */
export function readConfigFile(file: string): ConfigFile {
  const path = resolve(file);
  let text: string;
  try {
    text = readPlainFile(path, CONFIG_FILE_MAX_BYTES);
  } catch (error) {
    if (!(error instanceof PlainFileError)) throw error;
    const message =
      error.code === 'ENOENT'
        ? `config file ${path} does not exist; check the path, or omit the file to run on defaults and environment variables`
        : `cannot read config file ${path}: ${error.reason}; point at a readable YAML file of at most ${CONFIG_FILE_MAX_BYTES / 1024} KiB`;
    throw new ConfigError(message, [{ path: '(file)', message }]);
  }
  return parseConfigText(path, text);
}

/** Parses the text of config file `file` (read already), with the errors of readConfigFile. */
export function parseConfigText(file: string, text: string): ConfigFile {
  const path = resolve(file);
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const issues = doc.errors.map((error) => {
      const { line, col } = lineCounter.linePos(error.pos[0]);
      return { path: `${path}:${line}:${col}`, message: `${firstLine(error.message)} (line ${line}, column ${col})` };
    });
    const listed = issues.map((issue) => `  ${issue.message}`).join('\n');
    throw new ConfigError(`config file ${path} is not valid YAML:\n${listed}`, issues);
  }

  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // yaml throws a plain ReferenceError past maxAliasCount: an invalid file, like a syntax error,
    // not a reason to stop reading the others (one tenant file must not stop every tenant).
    const message = `config file ${path} is not valid YAML: ${error instanceof Error ? error.message : String(error)} (too many aliases)`;
    throw new ConfigError(message, [{ path: '(file)', message }]);
  }
  if (value !== null && value !== undefined && !isPlainObject(value)) {
    const message = `config file ${path} must contain a mapping of settings at the top level, not ${Array.isArray(value) ? 'a list' : 'a single value'}`;
    throw new ConfigError(message, [{ path: '(root)', message }]);
  }

  return {
    path,
    value: value ?? {},
    locate(segments) {
      let node: unknown = doc.contents;
      let offset: number | undefined;
      for (const segment of segments) {
        if (isMap(node)) {
          const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
          if (!pair) break;
          offset = (pair.key as YamlNode).range?.[0];
          node = pair.value;
        } else if (isSeq(node) && typeof segment === 'number') {
          const item: unknown = node.items[segment];
          if (!item) break;
          offset = (item as YamlNode).range?.[0];
          node = item;
        } else {
          break;
        }
      }
      return offset === undefined ? undefined : lineCounter.linePos(offset);
    },
  };
}

function firstLine(message: string): string {
  return message.split('\n', 1)[0]?.replace(/ at line \d+, column \d+:?$/, '') ?? message;
}
