import { existsSync, readFileSync } from 'node:fs';

/**
 * Parses a JSON Lines file; a missing file is empty. Fails the test on a torn or invalid line;
 * `whileWritten` (a file a running daemon is appending to, read to wait for it) leaves out a last
 * line not yet ended: the writer may be half way through it.
 */
export function readJsonLines<T = Record<string, unknown>>(
  path: string,
  options: { whileWritten?: boolean } = {},
): T[] {
  if (!existsSync(path)) return [];
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  if (lines.at(-1) !== '' && options.whileWritten) lines[lines.length - 1] = '';
  if (lines.at(-1) !== '') throw new Error(`${path} does not end with a newline: a line was torn`);
  return lines.slice(0, -1).map((line, i) => {
    try {
      return JSON.parse(line) as T;
    } catch {
      throw new Error(`${path} line ${i + 1} is not JSON: ${line.slice(0, 120)}`);
    }
  });
}
