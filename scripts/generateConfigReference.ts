/**
 * Writes docs/configuration-reference.md from the application's zod config schema.
 *
 *   tsx scripts/generateConfigReference.ts [schemaModule] [exportName] [--check] [--out file]
 *
 * schemaModule defaults to src/config/appConfigSchema.ts and exportName to appConfigSchema.
 * If the module also exports `ENV_MAPPING` or `envMapping` (env var -> dotted path), the
 * variables are listed too.
 * --check writes nothing and exits 1 when the file on disk is out of date (for CI).
 * `generateConfigReference` is the same command as a function, for the tests to run in process.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { renderConfigReference } from '../src/config/renderConfigReference.js';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

const INTRO = `Every setting below can be written in the YAML config file. Settings are layered, later
layers winning: the defaults shown here < the config file < environment variables < command-line
flags. Nested objects merge key by key; lists replace.

String values in the file may reference environment variables as \`\${NAME}\` or
\`\${NAME:-fallback}\`; write \`$\${\` for a literal \`\${\`. Numbers and booleans may be given as
strings (as environment variables always are). Unknown keys are rejected.

Values of secret fields (described "Secret: ..." or named \`apiKey\`, \`secret\`, \`secrets\`,
\`password\` or \`token\`) are shown as \`<redacted>\` in configuration errors.`;

interface Args {
  modulePath: string;
  exportName: string;
  check: boolean;
  out: string;
}

function parseArgs(argv: readonly string[]): Args {
  const positional: string[] = [];
  let check = false;
  let out = resolve(repoRoot, 'docs/configuration-reference.md');
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--check') check = true;
    else if (arg === '--out') out = resolve(argv[++i] ?? '');
    else if (arg.startsWith('--'))
      throw new Error(`unknown option ${arg}; usage: [schemaModule] [exportName] [--check] [--out file]`);
    else positional.push(arg);
  }
  return {
    modulePath: resolve(positional[0] ?? resolve(repoRoot, 'src/config/appConfigSchema.ts')),
    exportName: positional[1] ?? 'appConfigSchema',
    check,
    out,
  };
}

/** Where the command writes its messages: the process's streams when run as a script. */
export interface CommandOutput {
  out(line: string): void;
  error(line: string): void;
}

/** The command with `argv` (the arguments after the script's path); resolves with its exit code. */
export async function generateConfigReference(argv: readonly string[], output: CommandOutput): Promise<number> {
  const args = parseArgs(argv);
  const module = (await import(pathToFileURL(args.modulePath).href)) as Record<string, unknown>;
  const schema = module[args.exportName];
  if (!(schema instanceof z.ZodType)) {
    output.error(`${args.modulePath} does not export a zod schema named ${args.exportName}`);
    return 2;
  }
  const mapping = module.ENV_MAPPING ?? module.envMapping;
  const envMapping = isStringRecord(mapping) ? mapping : undefined;
  const markdown = renderConfigReference(schema, { title: 'Configuration reference', intro: INTRO, envMapping });

  const current = existsSync(args.out) ? readFileSync(args.out, 'utf8') : undefined;
  if (args.check) {
    if (current === markdown) return 0;
    output.error(
      `${args.out} is out of date with the config schema; run \`npm run docs:config\` and commit the result`,
    );
    return 1;
  }
  if (current !== markdown) writeFileSync(args.out, markdown);
  output.out(`${current === markdown ? 'unchanged' : 'wrote'} ${args.out}`);
  return 0;
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return typeof value === 'object' && value !== null && Object.values(value).every((v) => typeof v === 'string');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href)
  generateConfigReference(process.argv.slice(2), { out: console.log, error: console.error }).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exitCode = 2;
    },
  );
