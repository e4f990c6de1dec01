import type { z } from 'zod';
import { ConfigError } from '../errors.js';
import { formatConfigPath, getAtPath } from './configPath.js';
import { knownKeysAtPath, type JsonSchema } from './configJsonSchema.js';
import { findSecrets } from './secretFields.js';
import { suggestKey } from './suggestKey.js';
import { redactUrlCredentials } from '../secrets/urlCredentials.js';
import { cutText } from '../cutText.js';

type Issue = z.core.$ZodIssue;

export interface IssueContext {
  /** The merged config that failed validation. */
  readonly input: unknown;
  readonly jsonSchema: JsonSchema | undefined;
  /**
   * Where the value at `path` came from, phrased to follow "got X", e.g.
   * `from environment variable CHANGEFEED_BASE_URL` or `at /etc/changefeed.yaml:12:5`.
   */
  readonly describeOrigin?: (path: readonly PropertyKey[]) => string | undefined;
}

interface Problem {
  readonly path: PropertyKey[];
  readonly message: string;
  /** Unknown keys have no value worth showing, and showing it could leak a mistyped secret. */
  readonly showValue: boolean;
}

const REDACTED = '<redacted>';

/**
 * The most problems listed: enough to fix a file in one pass, where a file of 80,000 unknown keys
 * (330 sinks of 250) made a message of 11 MB, each key looked up for its line and origin.
 */
export const PROBLEMS_LISTED = 100;

/**
 * The most characters of a problem's path, and of its message, listed: a key may be as long as the
 * file (1 MiB, as YAML's `? key` or JSON's quoted keys), and its path, its message and its lookup
 * for a suggestion each took all of it, one line of 1.8 MB for a key of 900 KB.
 */
const PATH_LENGTH = 200;
const MESSAGE_LENGTH = 500;

/**
 * Turns zod's issues into one ConfigError listing every problem (the first PROBLEMS_LISTED) as
 * `<path>: <message>`, each with the offending value and where it was set, so the operator can fix
 * them all in one pass.
 * Values of secret fields are shown as `<redacted>`, and every secret in the input is scrubbed
 * from the text, in case a custom zod message quotes its input.
 */
export function formatConfigIssues(issues: readonly Issue[], context: IssueContext): ConfigError {
  const problems = issues.flatMap((issue) => explain(issue, [], context));
  const found = findSecrets(context.jsonSchema, context.input);
  // Very short values would shred the text; a field that short is reported as <redacted> anyway.
  const secrets = [...found.values].filter((secret) => secret.length >= 4).sort((a, b) => b.length - a.length);
  const scrub = (text: string): string =>
    redactUrlCredentials(secrets.reduce((out, secret) => out.split(secret).join(REDACTED), text));

  // By its line, so a problem zod reports twice is listed once.
  const listed = new Map<string, { path: string; message: string }>();
  let unlisted = 0;
  for (const problem of problems) {
    if (listed.size === PROBLEMS_LISTED) {
      unlisted++;
      continue;
    }
    const fullPath = formatConfigPath(problem.path);
    const fullMessage = scrub(problem.message + detail(problem, context, found.paths.has(fullPath)));
    // Scrubbed before it is cut, so that no cut leaves a secret's start unmatched; the path too,
    // for a secret pasted as a key.
    const path = cutText(scrub(fullPath), PATH_LENGTH);
    const message = cutText(fullMessage, MESSAGE_LENGTH);
    listed.set(`${fullPath}\n${fullMessage}`, { path, message });
  }
  const count = listed.size === 1 ? '1 problem' : `${listed.size} problems`;
  const lines = [...listed.values()].map(({ path, message }) => `  ${path}: ${message}`);
  // Not looked at, so not told apart from a problem zod reports twice: "up to".
  if (unlisted > 0) lines.push(`  ... and up to ${unlisted} more, not listed: fix these and check again`);
  const shown = unlisted > 0 ? `${count} listed` : count;
  return new ConfigError(`invalid configuration (${shown}):\n${lines.join('\n')}`, [...listed.values()]);
}

function explain(issue: Issue, prefix: PropertyKey[], context: IssueContext): Problem[] {
  const path = [...prefix, ...issue.path];
  switch (issue.code) {
    case 'unrecognized_keys': {
      const known = context.jsonSchema ? knownKeysAtPath(context.jsonSchema, path, context.input) : [];
      return issue.keys.map((key) => ({ path: [...path, key], message: unknownKey(key, known), showValue: false }));
    }
    case 'invalid_union': {
      if (issue.errors.length > 0) return explainClosestBranch(issue.errors, path, context);
      if (issue.discriminator !== undefined && 'options' in issue && issue.options) {
        return [
          {
            path,
            message: unknownVariant(getAtPath(context.input, path), issue.discriminator, issue.options),
            showValue: false,
          },
        ];
      }
      return [{ path, message: issue.message, showValue: true }];
    }
    case 'invalid_element':
    case 'invalid_key':
      return issue.issues.length > 0
        ? issue.issues.flatMap((inner) => explain(inner, path, context))
        : [{ path, message: issue.message, showValue: true }];
    case 'invalid_type':
      if (getAtPath(context.input, path) === undefined) {
        return [{ path, message: `required setting is missing (expected ${issue.expected})`, showValue: false }];
      }
      return [{ path, message: issue.message, showValue: true }];
    default:
      return [{ path, message: issue.message, showValue: true }];
  }
}

// A plain union fails once per member; the member with the fewest (and deepest) complaints is
// almost always the one the operator meant, and its complaints are the useful ones.
function explainClosestBranch(branches: readonly Issue[][], path: PropertyKey[], context: IssueContext): Problem[] {
  const score = (branch: readonly Issue[]): number =>
    branch.length * 100 - Math.max(0, ...branch.map((issue) => issue.path.length));
  const best = [...branches].sort((a, b) => score(a) - score(b))[0] ?? [];
  return best.flatMap((issue) => explain(issue, path, context));
}

function unknownKey(key: string, known: readonly string[]): string {
  const suggestion = suggestKey(key, known);
  const name = preview(key);
  if (suggestion !== undefined) return `unknown key ${name}; did you mean "${suggestion}"?`;
  if (known.length > 0 && known.length <= 15) return `unknown key ${name}; known keys here: ${known.join(', ')}`;
  return `unknown key ${name}`;
}

function unknownVariant(value: unknown, discriminator: string, options: readonly unknown[]): string {
  const tag = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[discriminator] : value;
  const expected = options.map((o) => JSON.stringify(o)).join(', ');
  if (tag === undefined) return `"${discriminator}" is required; expected one of ${expected}`;
  const names = options.filter((o): o is string => typeof o === 'string');
  const suggestion = typeof tag === 'string' ? suggestKey(tag, names) : undefined;
  const hint = suggestion === undefined ? '' : `; did you mean "${suggestion}"?`;
  return `unknown ${discriminator} ${preview(tag)}; expected one of ${expected}${hint}`;
}

function detail(problem: Problem, context: IssueContext, secret: boolean): string {
  const parts: string[] = [];
  const value = getAtPath(context.input, problem.path);
  if (problem.showValue && isScalar(value)) parts.push(`got ${secret ? REDACTED : preview(value)}`);
  const origin = context.describeOrigin?.(problem.path);
  if (origin !== undefined) parts.push(origin);
  return parts.length > 0 ? ` (${parts.join(' ')})` : '';
}

function isScalar(value: unknown): value is string | number | boolean | null {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
