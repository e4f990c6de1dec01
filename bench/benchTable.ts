/** One row of the benchmark table. */
export interface BenchRow {
  case: string;
  [column: string]: string | number;
}

/** Whether a row reached the goal it is judged against. */
export type Verdict = 'met' | 'short';

/**
 * A target the bench states, as a check of one row: `text` is what the table prints in its
 * `goal` column. A figure that is missing or not a number falls short: a case that did not
 * measure cannot meet anything.
 */
export interface Goal {
  readonly text: string;
  readonly met: (row: BenchRow) => boolean;
}

const figure = (row: BenchRow, column: string): number => {
  const value = row[column];
  return typeof value === 'number' ? value : value === undefined || value.trim() === '' ? Number.NaN : Number(value);
};

const formatted = (x: number): string => x.toLocaleString('en-US', { maximumFractionDigits: 2 });

/** `column` at least `limit`. */
export function atLeast(column: string, limit: number, unit = column): Goal {
  return { text: `>= ${formatted(limit)} ${unit}`, met: (row) => figure(row, column) >= limit };
}

/** `column` at most `limit`. */
export function atMost(column: string, limit: number, unit = column): Goal {
  return { text: `<= ${formatted(limit)} ${unit}`, met: (row) => figure(row, column) <= limit };
}

/** The ratio of two columns at most `limit` (e.g. transactions per request). */
export function ratioAtMost(numerator: string, denominator: string, limit: number, text: string): Goal {
  return { text, met: (row) => figure(row, numerator) / figure(row, denominator) <= limit };
}

/** A goal decided elsewhere (e.g. against another row), with its text. */
export function decided(text: string, met: boolean): Goal {
  return { text, met: () => met };
}

/** Every goal met; the texts joined. */
export function allOf(...goals: readonly Goal[]): Goal {
  return { text: goals.map((g) => g.text).join(', '), met: (row) => goals.every((g) => g.met(row)) };
}

/** The row with its `goal` and `verdict` columns (last, so they line up at the table's right). */
export function judged(row: BenchRow, goal: Goal): BenchRow {
  const verdict: Verdict = goal.met(row) ? 'met' : 'short';
  return { ...row, goal: goal.text, verdict };
}

export function printTable(title: string, rows: readonly BenchRow[]): void {
  if (rows.length === 0) return;
  const judgement = ['goal', 'verdict'];
  const keys = new Set(rows.flatMap((r) => Object.keys(r)));
  const columns = [...[...keys].filter((c) => !judgement.includes(c)), ...judgement.filter((c) => keys.has(c))];
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]): string => `| ${values.map((v, i) => v.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(columns));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) console.log(line(columns.map((c) => cell(r[c]))));
}

/**
 * Runs one case of a section, printing a line when it starts and its row(s) when it ends, so a
 * long section shows what it is doing; the section prints its aligned table at its end.
 */
export function benchCase(label: string, work: () => Promise<BenchRow>): Promise<BenchRow>;
export function benchCase<T>(
  label: string,
  work: () => Promise<T>,
  rowsOf: (result: T) => readonly BenchRow[],
): Promise<T>;
export async function benchCase<T>(
  label: string,
  work: () => Promise<T>,
  rowsOf: (result: T) => readonly BenchRow[] = (row) => [row as BenchRow],
): Promise<T> {
  console.log(`  ${label} ...`);
  const started = performance.now();
  const result = await work();
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  for (const row of rowsOf(result)) console.log(`  ${rowLine(row)} (${seconds} s)`);
  return result;
}

/** A row on one line: its case, then each column as `name: value`. */
export function rowLine(row: BenchRow): string {
  const { case: name, ...rest } = row;
  return [name, ...Object.entries(rest).map(([c, v]) => `${c}: ${cell(v)}`)].join('; ');
}

const cell = (v: string | number | undefined): string =>
  typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 1 }) : (v ?? '');

/** Samples resident memory while `work` runs; returns its peak in MiB. */
export async function withPeakRss<T>(work: () => Promise<T>): Promise<{ result: T; peakRssMiB: number }> {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 20);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { result, peakRssMiB: peak / 1024 / 1024 };
  } finally {
    clearInterval(timer);
  }
}
