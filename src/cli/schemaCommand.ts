import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { ChangefeedError } from '../errors.js';
import { publishedSchemaFiles } from '../sinks/publishedSchemas.js';
import type { CliIo } from './cliIo.js';
import type { CommandHost } from './commandLine.js';

export function defineSchemaCommand(program: Command, host: CommandHost): void {
  program
    .command('schema')
    .summary('print or write the schemas of the events')
    .description(
      `Prints a schema of the events: cloudevent (the envelope), career-data, skill-data, identity_provider-data (the data of each log; JSON Schema draft-07) or asyncapi (AsyncAPI 3.0, what each sink type carries). Without NAME, lists them. --out DIR writes every file there, to publish them where a sink's dataschema setting points. The same files are in docs/events/.`,
    )
    .argument('[name]', 'the schema to print')
    .option('--out <dir>', 'write every schema file into this directory')
    .action(host.run((name: string | undefined, options: SchemaOptions) => schemaCommand(name, options, host.io)));
}

interface SchemaOptions {
  out?: string;
}

function schemaCommand(name: string | undefined, values: SchemaOptions, io: CliIo): number {
  const files = publishedSchemaFiles();
  const byName = new Map(
    Object.entries(files).map(([file, text]) => [file.replace(/\.schema\.json$|\.yaml$/, ''), { file, text }]),
  );
  if (values.out !== undefined) {
    mkdirSync(values.out, { recursive: true });
    for (const [file, text] of Object.entries(files)) writeFileSync(join(values.out, file), text);
    io.stdout.write(`wrote ${Object.keys(files).join(', ')} to ${values.out}\n`);
    return 0;
  }
  if (name === undefined) {
    io.stdout.write(`${[...byName].map(([n, { file }]) => `${n.padEnd(24)} docs/events/${file}`).join('\n')}\n`);
    return 0;
  }
  const schema = byName.get(name);
  if (!schema) throw new ChangefeedError('USAGE', `no schema "${name}"; use one of ${[...byName.keys()].join(', ')}`);
  io.stdout.write(schema.text);
  return 0;
}
