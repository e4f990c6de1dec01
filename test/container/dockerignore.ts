/**
 * `.dockerignore` as Docker reads it (moby/patternmatcher): one pattern a line, `#` comments,
 * a leading `/` and `./` dropped, `!` re-includes, the last matching pattern wins. `*` and `?` stop
 * at `/`, `**` crosses directories, and a pattern that matches a directory excludes everything
 * under it. Paths are relative to the build context, with `/` separators.
 */

export interface IgnoreRule {
  readonly pattern: string;
  readonly negated: boolean;
  readonly regex: RegExp;
}

export function parseDockerignore(text: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const negated = line.startsWith('!');
    const pattern = cleanPath(negated ? line.slice(1).trim() : line);
    if (pattern === '') continue;
    rules.push({ pattern, negated, regex: patternRegex(pattern) });
  }
  return rules;
}

/** Whether the build context leaves out this path (or a directory above it). */
export function isIgnored(rules: readonly IgnoreRule[], path: string): boolean {
  const clean = cleanPath(path);
  const candidates = ancestry(clean);
  let ignored = false;
  for (const rule of rules) {
    if (candidates.some((p) => rule.regex.test(p))) ignored = !rule.negated;
  }
  return ignored;
}

/** Whether any rule re-includes something, so an ignored directory must still be walked. */
export function hasExceptions(rules: readonly IgnoreRule[]): boolean {
  return rules.some((r) => r.negated);
}

function cleanPath(path: string): string {
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return parts.join('/');
}

/** `a/b/c` -> [`a`, `a/b`, `a/b/c`]. */
function ancestry(path: string): string[] {
  const parts = path.split('/');
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
}

function patternRegex(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        i++;
        if (pattern[i + 1] === '/') i++;
        source += i + 1 >= pattern.length ? '.*' : '(?:.*/)?';
      } else source += '[^/]*';
    } else if (c === '?') source += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) source += '\\[';
      else {
        source += `[${pattern
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '\\' && i + 1 < pattern.length) source += escapeRegex(pattern[++i]!);
    else source += escapeRegex(c);
  }
  return new RegExp(`^${source}$`);
}

function escapeRegex(c: string): string {
  return /[.*+?^${}()|[\]\\]/.test(c) ? `\\${c}` : c;
}
