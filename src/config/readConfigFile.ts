import { resolve } from 'node:path';
import {
  Composer,
  LineCounter,
  Parser,
  YAMLParseError,
  isMap,
  isScalar,
  isSeq,
  type CST,
  type Document,
  type Node as YamlNode,
} from 'yaml';
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

/**
 * How deep collections may nest in a config file, its aliases expanded: settings nest a few levels.
 * yaml composes a document, and the loader merges and validates it, by recursion: 200,000 `[` in a
 * 400 KB file overflowed the stack (`check` aborted in V8's regexp compiler, exit 134), and an
 * alias inside its own anchor made an endless value (RangeError, not CONFIG_INVALID).
 */
export const MAX_NESTING = 32;

/**
 * How many keys one mapping may hold: a section's few dozen settings, or a webhook's headers. yaml
 * checks each key against those before it in its mapping (uniqueKeys), and each unknown key's
 * message looks its line up among them: 60,000 keys in 600 KB held `check` for minutes, and a
 * reload or a tenant file's read would hold the daemon's event loop as long.
 */
export const MAX_MAPPING_KEYS = 256;

const NOT_A_CONFIGURATION = 'settings nest a few levels, a few dozen keys each, so the file is not a configuration';

/** Parses the text of config file `file` (read already), with the errors of readConfigFile. */
export function parseConfigText(file: string, text: string): ConfigFile {
  const path = resolve(file);
  const lineCounter = new LineCounter();
  // parseDocument's steps, the bounds checked on the tokens, which yaml's parser makes without recursing.
  const tokens = [...new Parser(lineCounter.addNewLine).parse(text)];
  const past = firstPastBounds(tokens);
  if (past !== undefined) {
    const { line, col } = lineCounter.linePos(past.offset);
    const message = `config file ${path} ${past.problem} (line ${line}, column ${col}); ${NOT_A_CONFIGURATION}`;
    throw new ConfigError(message, [{ path: `${path}:${line}:${col}`, message }]);
  }
  const doc = firstDocument(tokens, text.length);
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
  const deepKey = keyPastNesting(value);
  if (deepKey !== undefined) {
    const where = `under ${deepKey} once its aliases are expanded; an alias inside its own anchor nests for ever`;
    const message = `config file ${path} nests values more than ${MAX_NESTING} levels deep (${where}); ${NOT_A_CONFIGURATION}`;
    throw new ConfigError(message, [{ path: deepKey, message }]);
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

/** The one document of `tokens`, as parseDocument composes it; a second is an error of the first. */
function firstDocument(tokens: readonly CST.Token[], length: number): Document.Parsed {
  let doc: Document.Parsed | undefined;
  for (const next of new Composer({ uniqueKeys: true }).compose(tokens, true, length)) {
    if (doc === undefined) doc = next;
    else {
      const message = 'the file holds a second YAML document (after "---"); keep one';
      doc.errors.push(new YAMLParseError([next.range[0], next.range[1]], 'MULTIPLE_DOCS', message));
      break;
    }
  }
  // compose(..., forceDoc = true) yields a document even for an empty text.
  return doc as Document.Parsed;
}

/** The first collection nested deeper than MAX_NESTING, or mapping of more than MAX_MAPPING_KEYS. */
function firstPastBounds(tokens: readonly CST.Token[]): { offset: number; problem: string } | undefined {
  const pending: [CST.Token | undefined, number][] = tokens.map((token) => [token, 0]);
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [token, depth] = next;
    if (token === undefined) continue;
    if (token.type === 'document') pending.push([token.value, depth]);
    if (token.type !== 'block-map' && token.type !== 'block-seq' && token.type !== 'flow-collection') continue;
    if (depth === MAX_NESTING)
      return { offset: token.offset, problem: `nests values more than ${MAX_NESTING} levels deep` };
    const mapping = token.type === 'block-map' || (token.type === 'flow-collection' && token.start.source === '{');
    if (mapping && token.items.length > MAX_MAPPING_KEYS)
      return { offset: token.offset, problem: `holds a mapping of more than ${MAX_MAPPING_KEYS} keys` };
    for (const item of token.items) pending.push([item.key ?? undefined, depth + 1], [item.value, depth + 1]);
  }
  return undefined;
}

/** The top-level key under which `value` nests deeper than MAX_NESTING (an alias in its own anchor: for ever). */
function keyPastNesting(value: unknown): string | undefined {
  if (!isPlainObject(value)) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const pending: [unknown, number][] = [[item, 1]];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      const [node, depth] = next;
      if (typeof node !== 'object' || node === null) continue;
      if (depth >= MAX_NESTING) return key;
      for (const child of Object.values(node)) pending.push([child, depth + 1]);
    }
  }
  return undefined;
}
