/**
 * Writes docs/events/ (JSON Schemas of the events and the AsyncAPI document) from the code.
 *
 *   tsx scripts/generateEventSchemas.ts [--check]
 *
 * --check writes nothing and exits 1 when a file on disk is missing or out of date (for CI).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publishedSchemaFiles } from '../src/sinks/publishedSchemas.js';

const dir = fileURLToPath(new URL('../docs/events', import.meta.url));
const check = process.argv.includes('--check');
const files = publishedSchemaFiles();
const stale = Object.entries(files).filter(([name, text]) => {
  const path = join(dir, name);
  return !existsSync(path) || readFileSync(path, 'utf8') !== text;
});
const strays = existsSync(dir) ? readdirSync(dir).filter((name) => !(name in files) && name !== 'README.md') : [];

if (check) {
  if (stale.length === 0 && strays.length === 0) process.exit(0);
  for (const [name] of stale) console.error(`docs/events/${name} is out of date with the code`);
  for (const name of strays) console.error(`docs/events/${name} is not generated any more`);
  console.error('run `npm run docs:events` and commit the result');
  process.exit(1);
}
mkdirSync(dir, { recursive: true });
for (const [name, text] of stale) writeFileSync(join(dir, name), text);
console.log(`${stale.length === 0 ? 'unchanged' : `wrote ${stale.map(([name]) => name).join(', ')} in`} ${dir}`);
for (const name of strays) console.log(`docs/events/${name} is not generated any more: remove it`);
