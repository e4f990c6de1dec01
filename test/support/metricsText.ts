import { spawnSync } from 'node:child_process';
import { findBinary, missingBinary, skipOrFail } from './requiredBinary.js';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (histogram `_bucket`/`_sum`/`_count` lines included). */
export function samplesOf(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const [, name, labelText = '', value] = match as unknown as [string, string, string | undefined, string];
    const labels: Record<string, string> = {};
    for (const [, key, raw] of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[key as string] = (raw as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name, labels, value: Number(value) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `labels`; undefined when there is none. */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = samplesOf(text).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return matching.length === 0 ? undefined : matching.reduce((sum, s) => sum + s.value, 0);
}

/** The metric family names an exposition declares (its `# TYPE` lines). */
export function familiesOf(text: string): string[] {
  return [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] as string);
}

/** promtool, or undefined after skipping (failing under CI) with why it is missing. */
export function promtool(what: string): string | undefined {
  if (skipOrFail(what, missingBinary('promtool'))) return undefined;
  return findBinary('promtool');
}

/** `promtool check metrics` on an exposition: its exit status and what it printed. */
export function checkMetrics(binary: string, exposition: string): { status: number | null; output: string } {
  const run = spawnSync(binary, ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}
