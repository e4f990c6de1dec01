import { ConfigError } from '../errors.js';
import { formatConfigPath, isPlainObject, setOwn, type PathSegment } from './configPath.js';

// `$${` is the escape, `${NAME}` / `${NAME:-default}` the references; anything else after `${`
// is an error rather than silently kept, so a typo like `${API KEY}` cannot reach the service.
const TOKEN = /\$\$\{|\$\{([^}]*)\}|\$\{/g;
const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([\s\S]*))?$/;

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string value of an already parsed YAML
 * tree; `$${` yields a literal `${`. Working on parsed values rather than the raw text means a
 * value containing quotes, colons or newlines can never change the document's structure.
 *
 * As in a shell, `:-` also applies when the variable is set but empty. Keys are left alone.
 * Every unset reference is reported at once, each naming its config path and variable, except
 * under the top-level sections in `keepUnsetUnder`, where an unset reference is left as written:
 * a command that does not read a section (status does not send to sinks) must not need its secrets.
 */
export function interpolateEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  source: string,
  options: { keepUnsetUnder?: readonly string[] } = {},
): unknown {
  const issues: { path: string; message: string }[] = [];
  const result = walk(value, [], { env, issues, keepUnsetUnder: new Set(options.keepUnsetUnder ?? []) });
  if (issues.length > 0) {
    const lines = issues.map((i) => `  ${i.path}: ${i.message}`).join('\n');
    throw new ConfigError(`${source} refers to environment variables that are not set:\n${lines}`, issues);
  }
  return result;
}

interface Walk {
  env: NodeJS.ProcessEnv;
  issues: { path: string; message: string }[];
  keepUnsetUnder: ReadonlySet<PathSegment>;
}

function walk(value: unknown, path: PathSegment[], w: Walk): unknown {
  if (typeof value === 'string') return substitute(value, path, w);
  if (Array.isArray(value)) return value.map((item, index) => walk(item, [...path, index], w));
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) setOwn(out, key, walk(item, [...path, key], w));
    return out;
  }
  return value;
}

function substitute(text: string, path: PathSegment[], { env, issues, keepUnsetUnder }: Walk): string {
  if (!text.includes('${')) return text;
  const where = formatConfigPath(path);
  return text.replace(TOKEN, (token, body: string | undefined) => {
    if (token === '$${') return '${';
    const reference = body === undefined ? undefined : REFERENCE.exec(body);
    if (!reference) {
      issues.push({
        path: where,
        message:
          body === undefined
            ? 'unterminated "${"; write "$${" for a literal "${"'
            : `"\${${body}}" is not a variable reference; use \${NAME} or \${NAME:-default} (NAME: letters, digits, _), or "$\${" for a literal`,
      });
      return token;
    }
    const [, name = '', fallback] = reference;
    const current = env[name];
    if (fallback !== undefined) return current === undefined || current === '' ? fallback : current;
    if (current === undefined) {
      if (path[0] !== undefined && keepUnsetUnder.has(path[0])) return token;
      issues.push({
        path: where,
        message: `environment variable ${name} is not set; export it, or write \${${name}:-default} to give a default`,
      });
      return token;
    }
    return current;
  });
}
