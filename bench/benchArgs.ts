import { suggestKey } from '../src/config/suggestKey.js';

/** What `npm run bench -- <args>` asks for. */
export type BenchRequest =
  { readonly list: true } | { readonly sections: readonly string[] } | { readonly error: string };

const LIST_FLAGS = ['--list', '-l', '--help', '-h'];

/**
 * `[]`: every section, in the bench's order; `--list` (or `--help`): the sections and their
 * expected times; otherwise the named sections, in the order given, each once. An unknown name
 * or flag is an error that names it and, where one is close, the section meant.
 */
export function parseBenchArgs(args: readonly string[], known: readonly string[]): BenchRequest {
  if (args.length === 0) return { sections: known };
  if (args.some((a) => LIST_FLAGS.includes(a))) return { list: true };
  const sections: string[] = [];
  for (const arg of args) {
    if (arg.startsWith('-')) return { error: `unknown option "${arg}"; the only option is --list` };
    if (!known.includes(arg)) {
      const near = suggestKey(arg, known);
      const hint = near === undefined ? '' : `; did you mean "${near}"?`;
      return { error: `unknown bench section "${arg}"${hint} (npm run bench -- --list shows them)` };
    }
    if (!sections.includes(arg)) sections.push(arg);
  }
  return { sections };
}
