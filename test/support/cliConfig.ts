import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes `<dir>/changefeed.yaml` for a daemon or command run against the service at `baseUrl`:
 * a budget that never holds a test back, state in `<dir>/state`, one file sink `<dir>/events.jsonl`
 * (or `sinks`, YAML list items). `extra` lines (watch, http, ...) go in between. Returns its path.
 */
export function writeCliConfig(
  dir: string,
  baseUrl: string,
  options: { extra?: string[]; sinks?: string[] } = {},
): string {
  const file = join(dir, 'changefeed.yaml');
  const sinks = options.sinks ?? [`  - { name: out, type: file, path: ${join(dir, 'events.jsonl')} }`];
  writeFileSync(
    file,
    [
      `api: { baseUrl: "${baseUrl}" }`,
      'budget: { readsPerHour: 3600000, reserve: 0 }',
      `stateDir: ${join(dir, 'state')}`,
      ...(options.extra ?? []),
      'sinks:',
      ...sinks,
    ].join('\n'),
  );
  return file;
}
