import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ChangefeedError } from '../errors.js';
import { publishedSchemaFiles } from '../sinks/publishedSchemas.js';

export const SCHEMA_USAGE = `changefeed schema [NAME] [--out DIR]
  Prints a schema of the events: cloudevent (the envelope), career-data, skill-data,
  identity_provider-data (the data of each log; JSON Schema draft-07) or asyncapi (AsyncAPI 3.0,
  what each sink type carries). Without NAME, lists them. --out DIR writes every file there, to
  publish them where a sink's dataschema setting points. The same files are in docs/events/.`;

export function schemaCommand(argv: string[]): number {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { out: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const files = publishedSchemaFiles();
  const byName = new Map(
    Object.entries(files).map(([file, text]) => [file.replace(/\.schema\.json$|\.yaml$/, ''), { file, text }]),
  );
  if (values.out !== undefined) {
    mkdirSync(values.out, { recursive: true });
    for (const [file, text] of Object.entries(files)) writeFileSync(join(values.out, file), text);
    process.stdout.write(`wrote ${Object.keys(files).join(', ')} to ${values.out}\n`);
    return 0;
  }
  const [name, ...rest] = positionals;
  if (rest.length > 0) throw new ChangefeedError('USAGE', 'give one schema name at most');
  if (name === undefined) {
    process.stdout.write(`${[...byName].map(([n, { file }]) => `${n.padEnd(24)} docs/events/${file}`).join('\n')}\n`);
    return 0;
  }
  const schema = byName.get(name);
  if (!schema) throw new ChangefeedError('USAGE', `no schema "${name}"; use one of ${[...byName.keys()].join(', ')}`);
  process.stdout.write(schema.text);
  return 0;
}
