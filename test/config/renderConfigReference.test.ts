import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { renderConfigReference } from '../../src/config/renderConfigReference.js';
import { generateConfigReference } from '../../scripts/generateConfigReference.js';
import { envMapping, sampleConfigSchema } from './fixtures/sampleConfigSchema.js';
import { useTempDir } from './tempConfigDir.js';

const temp = useTempDir();

/** The lines of the table under `## <heading>`. */
function table(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no section "${heading}" in:\n${markdown}`);
  const rest = markdown.slice(start + heading.length + 5);
  const end = rest.indexOf('\n## ');
  return (end < 0 ? rest : rest.slice(0, end)).split('\n').filter((line) => line.startsWith('| `'));
}

describe('renderConfigReference', () => {
  const markdown = renderConfigReference(sampleConfigSchema, { title: 'Configuration reference', envMapping });

  it('renders one table per object level with path, type, default and description', () => {
    expect(markdown.startsWith('# Configuration reference\n')).toBe(true);
    expect(table(markdown, 'Top level')).toEqual([
      '| `api` | object | *required* | How to reach the service. |',
      '| `stateDir` | string | `"./state"` | Directory of the SQLite state file. |',
      '| `logLevel` | "debug" \\| "info" \\| "warn" \\| "error" | `"info"` | Minimum level written to the log. |',
      '| `proxy` | object \\| null | `null` | Outbound HTTP proxy, or null for none. |',
      '| `logs` | ("career" \\| "skill" \\| "identity_provider")[] | `["career"]` | Activity logs to poll. |',
      '| `sinks` | object[] | `[]` | Where events go. Variants by `type`: `stdout`, `webhook`, `file`. |',
    ]);
    expect(table(markdown, '`api`')).toEqual([
      '| `api.baseUrl` | string (uri) | `"https://api.example.test"` | Base URL of the service. |',
      '| `api.apiKey` | string | *required* | Secret: API key sent as a bearer token. |',
      '| `api.timeoutMs` | integer (> 0) | `10000` | Per-request timeout in milliseconds. |',
    ]);
  });

  it('documents the fields of a nullable object', () => {
    expect(table(markdown, '`proxy`')).toEqual([
      '| `proxy.url` | string (uri) | *required* | Proxy URL. |',
      '| `proxy.password` | string | — |  |',
    ]);
  });

  it('gives each variant of the type-tagged sink union its own section', () => {
    expect(markdown).toContain('## `sinks[]` with `type: "stdout"`\n\nPrint events to stdout.');
    expect(table(markdown, '`sinks[]` with `type: "webhook"`')).toEqual([
      '| `sinks[].type` | "webhook" | *required* | POSTs each event to an HTTP endpoint. |',
      '| `sinks[].url` | string (uri) | *required* | Endpoint that receives the events. |',
      '| `sinks[].secret` | string | — | Secret: signing key for the webhook-signature header. |',
      '| `sinks[].headers` | map<string, string> | `{}` | Extra request headers. |',
    ]);
    expect(table(markdown, '`sinks[]` with `type: "file"`')).toEqual([
      '| `sinks[].type` | "file" | *required* | Appends events to a file. |',
      '| `sinks[].path` | string | *required* | File to append to. |',
    ]);
  });

  it('lists the environment variables and the paths they set', () => {
    expect(markdown).toContain('| `CHANGEFEED_API_KEY` | `api.apiKey` |');
  });

  it('lists a level shared by every variant once, and tells differing ones apart', () => {
    const delivery = z.strictObject({ batchSize: z.number().default(10).describe('Events per write.') });
    const schema = z.strictObject({
      sinks: z.array(
        z.discriminatedUnion('type', [
          z.strictObject({ type: z.literal('a'), delivery, extra: z.strictObject({ x: z.string() }) }),
          z.strictObject({ type: z.literal('b'), delivery, extra: z.strictObject({ y: z.string() }) }),
        ]),
      ),
      labels: z
        .record(z.string(), z.strictObject({ color: z.string().describe('A colour | with a pipe.') }))
        .optional(),
    });
    const text = renderConfigReference(schema, { title: 'T' });
    expect(text.match(/^## `sinks\[\]\.delivery`$/gm)).toHaveLength(1);
    expect(text).toContain('## `sinks[].extra` (with `type: "a"`)');
    expect(text).toContain('## `sinks[].extra` (with `type: "b"`)');
    expect(table(text, '`labels.<name>`')).toEqual([
      '| `labels.<name>.color` | string | *required* | A colour \\| with a pipe. |',
    ]);
    expect(table(text, 'Top level')[1]).toBe('| `labels` | map<string, object> | — |  |');
  });

  it('is deterministic', () => {
    expect(renderConfigReference(sampleConfigSchema, { title: 'Configuration reference', envMapping })).toBe(markdown);
  });
});

describe('scripts/generateConfigReference.ts', () => {
  const fixture = fileURLToPath(new URL('./fixtures/sampleConfigSchema.ts', import.meta.url));
  // The script's command in this process: its exit code and what it writes to stderr. Run as a
  // script, it is `npm run docs:config -- --check` in `npm run checks`.
  const run = async (...args: string[]): Promise<{ status: number; stderr: string }> => {
    const stderr: string[] = [];
    const status = await generateConfigReference([fixture, 'sampleConfigSchema', ...args], {
      out: () => undefined,
      error: (line) => stderr.push(`${line}\n`),
    });
    return { status, stderr: stderr.join('') };
  };

  it('writes the reference, and --check fails only once the file is out of date', async () => {
    const out = await temp.write('configuration-reference.md', 'stale\n');
    expect((await run('--check', '--out', out)).status).toBe(1);
    expect((await run('--out', out)).status).toBe(0);
    const written = await readFile(out, 'utf8');
    expect(written).toContain('Settings are layered');
    expect(written).toContain('| `CHANGEFEED_API_KEY` | `api.apiKey` |');
    expect(written).toContain('## `sinks[]` with `type: "webhook"`');
    expect(await run('--check', '--out', out)).toEqual({ status: 0, stderr: '' });
    await writeFile(out, `${await readFile(out, 'utf8')}edited by hand\n`);
    const check = await run('--check', '--out', out);
    expect(check.status).toBe(1);
    expect(check.stderr).toContain('is out of date');
  });
});
