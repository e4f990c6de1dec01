import { Gauge, type GaugeConfiguration, type MetricObjectWithValues, type MetricValue } from 'prom-client';

/**
 * A gauge whose series are read afresh at each scrape: `get` answers what `read` found, and the
 * gauge keeps nothing between scrapes. Two scrapes that overlap each answer their own reads, with
 * nothing shared for one to reset under the other; and no series goes through prom-client's `set`,
 * which hashes each label set into a map the next scrape empties again (25,000 series a scrape at
 * 1,000 tenants).
 */
export class ScrapeGauge<L extends string> extends Gauge<L> {
  constructor(
    config: Omit<GaugeConfiguration<L>, 'collect'>,
    private readonly read: () => Promise<MetricValue<L>[]>,
  ) {
    super(config);
  }

  override async get(): Promise<MetricObjectWithValues<MetricValue<L>>> {
    const [gauge, values] = await Promise.all([super.get(), this.read()]);
    return { ...gauge, values };
  }
}
