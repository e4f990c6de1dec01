/** One row of the benchmark table. */
export interface BenchRow {
  case: string;
  [column: string]: string | number;
}

export function printTable(title: string, rows: readonly BenchRow[]): void {
  if (rows.length === 0) return;
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: string | number | undefined): string =>
    typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 1 }) : (v ?? '');
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]): string => `| ${values.map((v, i) => v.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(columns));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) console.log(line(columns.map((c) => cell(r[c]))));
}

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
