/** How far back the delivered count is remembered, and the shortest span a rate is given over. */
const WINDOW_MS = 120_000;
const MIN_SPAN_MS = 5_000;

export interface CountSample {
  at: number;
  delivered: number;
}

/**
 * Deliveries per minute from samples of the delivered count, oldest first: the count's rise from
 * the oldest sample within the window to the newest, per minute. Null until two samples lie
 * MIN_SPAN_MS apart; a count that went down (a store pruned or reset) starts over.
 */
export function perMinute(samples: readonly CountSample[], now: number): number | null {
  const recent = samples.filter((s) => s.at >= now - WINDOW_MS);
  const first = recent[0];
  const last = recent.at(-1);
  if (!first || !last || last.at - first.at < MIN_SPAN_MS || last.delivered < first.delivered) return null;
  return ((last.delivered - first.delivered) * 60_000) / (last.at - first.at);
}

/**
 * The delivered counts the console has seen per tenant and sink, to tell a rate: the store keeps
 * counts, not their history. Every view of the sinks (and its refresh every few seconds) adds a
 * sample; a sink looked at for the first time shows its rate from the next refresh on.
 */
export class DeliveryRates {
  private readonly samples = new Map<string, CountSample[]>();

  record(tenant: string, sink: string, delivered: number, now: number): number | null {
    const key = `${tenant}\u0000${sink}`;
    const kept = (this.samples.get(key) ?? []).filter((s) => s.at >= now - WINDOW_MS && s.delivered <= delivered);
    kept.push({ at: now, delivered });
    this.samples.set(key, kept);
    return perMinute(kept, now);
  }

  /** Forgets tenants and sinks no longer known. */
  keepOnly(keys: ReadonlySet<string>): void {
    for (const key of this.samples.keys()) if (!keys.has(key.split('\u0000')[0] ?? '')) this.samples.delete(key);
  }
}
