import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { processIo } from '../../src/cli/cliIo.js';
import { ENV_MAPPING } from '../../src/config/appConfigSchema.js';
import { ERROR_CODES } from '../../src/errors.js';
import { SINK_FACTORIES } from '../../src/sinks/sinkRegistry.js';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const readme = read('README.md');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** The rows of the README table that follows `heading`. */
function tableAfter(heading: string): string {
  const start = readme.indexOf(heading);
  expect(start, `README.md has "${heading}"`).toBeGreaterThanOrEqual(0);
  const rest = readme.slice(start + heading.length);
  const next = rest.search(/\n## /);
  return (next === -1 ? rest : rest.slice(0, next))
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .join('\n');
}

describe('README.md matches the code', () => {
  it('lists every environment variable the code reads', () => {
    const reads = new Set(['CHANGEFEED_CONFIG', ...Object.keys(ENV_MAPPING)]);
    for (const file of sourceFiles(join(ROOT, 'src'))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/\benv\.(CHANGEFEED_[A-Z_]+)/g))
        reads.add(match[1] as string);
    }
    const table = tableAfter('## Environment variables');
    expect([...reads].filter((name) => !table.includes(`| \`${name}\` |`))).toEqual([]);
  });

  it('lists every command of changefeed --help', () => {
    const table = tableAfter('## Commands');
    const commands = buildProgram(processIo()).commands.map((command) => command.name());
    expect(commands.length).toBeGreaterThan(10);
    expect(commands.filter((name) => !table.includes(`| \`changefeed ${name}`))).toEqual([]);
  });

  it('names every sink type in the folder table', () => {
    const row =
      tableAfter('## Layout')
        .split('\n')
        .find((line) => line.startsWith('| `sinks/`')) ?? '';
    expect(Object.keys(SINK_FACTORIES).filter((type) => !row.includes(type))).toEqual([]);
  });
});

describe('the sink docs match the registry', () => {
  it('docs/configuration.md lists every sink type and its batch limits', () => {
    const doc = read('docs/configuration.md');
    for (const type of Object.keys(SINK_FACTORIES)) {
      expect(doc, type).toContain(`\`${type}\``);
      expect(doc, `${type} in the limits table`).toMatch(new RegExp(`\\| \`${type}\` \\| [0-9,]+`));
    }
  });

  it('docs/sinks.md has a section for every sink type', () => {
    const headings = read('docs/sinks.md')
      .split('\n')
      .filter((line) => line.startsWith('## '));
    expect(Object.keys(SINK_FACTORIES).filter((type) => !headings.includes(`## ${type}`))).toEqual([]);
  });
});

describe('docs/operations.md matches the code', () => {
  it('explains every error code the code can raise', () => {
    const errorCodes = read('docs/operations.md').split('## Error codes')[1] ?? '';
    expect(ERROR_CODES.filter((code) => !errorCodes.includes(`| \`${code}\` |`))).toEqual([]);
  });
});

describe('the docs name files that exist', () => {
  // A file the reader is told to create, not one that exists.
  const examples = new Set(['src/sinks/socketSink.ts', 'src/sinks/socketSinkConfig.ts']);
  it.each(
    ['README.md', ...readdirSync(join(ROOT, 'docs')).map((name) => `docs/${name}`)].filter((p) => p.endsWith('.md')),
  )('%s', (path) => {
    const named = [...read(path).matchAll(/\b((?:src|test|bench|scripts)\/[\w./-]+\.ts)\b/g)].map(
      (m) => m[1] as string,
    );
    expect(named.filter((file) => !examples.has(file) && !existsSync(join(ROOT, file)))).toEqual([]);
  });
});
