import { Histogram, type Metric, type MetricObjectWithValues, type MetricValue } from 'prom-client';

/** A sample as prom-client's metrics give it: a histogram's carry their series' labels as `sharedLabels`. */
interface Sample extends MetricValue<string> {
  metricName?: string;
  sharedLabels?: Record<string, string | number>;
}

/** What every prom-client metric offers; a histogram's and a summary's also `getForPromString`. */
type RenderedMetric = Metric & { getForPromString?: () => Promise<MetricObjectWithValues<Sample>> };

/**
 * What a prom-client (15.1) histogram holds of each series: its labels, its count per bucket
 * (by upper bound, not cumulative), its sum and count. Read directly, it saves the 16 objects per
 * series that `getForPromString` builds only to be rendered and dropped; the test that compares
 * this text with prom-client's catches a version that holds them otherwise.
 */
interface HistogramSeries {
  labels: Record<string, string | number>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}
interface HistogramInternals {
  name: string;
  help: string;
  upperBounds: number[];
  hashMap: Record<string, HistogramSeries>;
  collect?: () => unknown;
}

/**
 * The Prometheus text (format 0.0.4) of one metric, byte for byte as prom-client's
 * `Registry.getSingleMetricAsString` writes it for a registry without default labels, at a fraction
 * of its CPU (prom-client formats every label of every sample through `Object.entries`, two regular
 * expressions and an array join). Here a label value is escaped only when it holds a character that
 * needs it, and the labels a histogram's samples share (its series' own labels) are rendered once
 * per labels object, as prom-client caches them too.
 */
export class MetricText {
  /** The rendered labels of a histogram's series, by the object prom-client keeps them in. */
  private readonly sharedTexts = new WeakMap<object, string>();

  async render(metric: Metric): Promise<string> {
    if (metric instanceof Histogram) {
      const histogram = metric as unknown as HistogramInternals;
      if (Array.isArray(histogram.upperBounds) && typeof histogram.hashMap === 'object')
        return this.renderHistogram(histogram);
    }
    const rendered = metric as RenderedMetric;
    const data = (
      typeof rendered.getForPromString === 'function' ? await rendered.getForPromString() : await metric.get()
    ) as MetricObjectWithValues<Sample>;
    const name = escapeText(data.name);
    const lines = [`# HELP ${name} ${escapeText(data.help)}`, `# TYPE ${name} ${data.type}`];
    for (const sample of data.values) {
      const shared = sample.sharedLabels;
      let labels = ownLabels(sample.labels, shared);
      if (shared !== undefined) {
        const sharedText = this.sharedText(shared);
        if (sharedText !== '') labels = labels === '' ? sharedText : `${labels},${sharedText}`;
      }
      const sampleName = sample.metricName ?? name;
      lines.push(
        labels === ''
          ? `${sampleName} ${valueText(sample.value)}`
          : `${sampleName}{${labels}} ${valueText(sample.value)}`,
      );
    }
    return lines.join('\n');
  }

  private async renderHistogram(histogram: HistogramInternals): Promise<string> {
    if (histogram.collect) await histogram.collect();
    const name = escapeText(histogram.name);
    const lines = [`# HELP ${name} ${escapeText(histogram.help)}`, `# TYPE ${name} histogram`];
    const bounds = histogram.upperBounds.map((bound) => [bound, `${name}_bucket{le="${bound}"`] as const);
    for (const series of Object.values(histogram.hashMap)) {
      const shared = this.sharedText(series.labels);
      const labels = shared === '' ? '}' : `,${shared}}`;
      let cumulative = 0;
      for (const [bound, bucket] of bounds) {
        cumulative += series.bucketValues[bound] ?? 0;
        lines.push(`${bucket}${labels} ${valueText(cumulative)}`);
      }
      lines.push(`${name}_bucket{le="+Inf"${labels} ${valueText(series.count)}`);
      const own = shared === '' ? '' : `{${shared}}`;
      lines.push(`${name}_sum${own} ${valueText(series.sum)}`, `${name}_count${own} ${valueText(series.count)}`);
    }
    return lines.join('\n');
  }

  private sharedText(shared: Record<string, string | number>): string {
    let text = this.sharedTexts.get(shared);
    if (text === undefined) {
      text = ownLabels(shared, undefined);
      this.sharedTexts.set(shared, text);
    }
    return text;
  }
}

/** `name="value"` for each label of `labels` not in `shared`, comma-separated. */
function ownLabels(
  labels: Record<string, string | number | undefined> | undefined,
  shared: Record<string, unknown> | undefined,
): string {
  let text = '';
  for (const name in labels) {
    if (!Object.prototype.hasOwnProperty.call(labels, name)) continue;
    if (shared !== undefined && Object.prototype.hasOwnProperty.call(shared, name)) continue;
    const value = labels[name];
    const part = `${name}="${typeof value === 'string' ? escapeLabelValue(value) : String(value)}"`;
    text = text === '' ? part : `${text},${part}`;
  }
  return text;
}

const NEEDS_ESCAPE = /[\\\n"]/;

function escapeLabelValue(value: string): string {
  return NEEDS_ESCAPE.test(value) ? escapeText(value).replace(/"/g, '\\"') : value;
}

/** A backslash and a line feed escaped, as in a HELP text and a label value. */
function escapeText(text: string): string {
  return text.includes('\\') || text.includes('\n') ? text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : text;
}

/** As prom-client writes a value: `Nan` (sic), `+Inf` and `-Inf` for the numbers that are not finite. */
function valueText(value: number): string {
  if (Number.isNaN(value)) return 'Nan';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return `${value}`;
}
