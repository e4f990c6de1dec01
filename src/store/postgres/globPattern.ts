/**
 * A journal type filter (a glob: `*` any run of characters, `?` exactly one) as a LIKE pattern
 * with `\` as its escape character. LIKE's own wildcards `%` and `_` and the escape itself are
 * escaped, so only `*` and `?` are wildcards, as in SQLite's GLOB (which also reads `[...]` as a
 * character class; here `[` matches itself). Both are case-sensitive.
 */
export function globToLike(glob: string): string {
  let like = '';
  for (const char of glob) {
    if (char === '*') like += '%';
    else if (char === '?') like += '_';
    else if (char === '%' || char === '_' || char === '\\') like += `\\${char}`;
    else like += char;
  }
  return like;
}
