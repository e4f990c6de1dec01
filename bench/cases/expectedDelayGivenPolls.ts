/**
 * The detection delay a day's polls give a Poisson change, averaged over when it could have
 * happened, instead of over the changes that did happen.
 *
 * A measured mean is one draw: the ~900 changes of three measured hours fall early or late in
 * their logs' poll intervals by chance, and any change that moves one poll moves every later
 * phase, so a seed's ratio to round-robin moves by about ±0.02 (docs/scheduling.md). Given the
 * polls that were made and each log's true rate, the expected delay needs no draw: a change at a
 * uniformly random moment of [from, until) on log i waits until its next poll, so the mean is
 * Σ λᵢ · ∫ (next poll − t) dt / (until − from) / Σ λᵢ, and the tail the same integral of the
 * moments that wait longer than d. What is left of the noise is the policy's own (which polls it
 * made), not the arrivals'.
 */

export interface PolledLog {
  /** The log's true rate, changes per hour (only its share of the total matters). */
  rate: number;
  /** When each poll read the log (its first request), any order. */
  pollTimes: readonly number[];
}

export interface ExpectedDelay {
  meanMinutes: number;
  p95Minutes: number;
}

/** One stretch of moments that all wait for the same poll: changes in [from, to) are read at `readAt`. */
interface Stretch {
  weight: number;
  from: number;
  to: number;
  readAt: number;
}

/**
 * Expected mean and 95th percentile of the delay of a change performed at a uniformly random
 * moment of [from, until), on log i with probability ∝ its rate, read by the first poll after it.
 * A change after a log's last poll waits until `endAt` (the end of the day: a lower bound).
 */
export function expectedDelayGivenPolls(
  logs: readonly PolledLog[],
  from: number,
  until: number,
  endAt: number,
): ExpectedDelay {
  const totalRate = logs.reduce((sum, l) => sum + l.rate, 0);
  if (totalRate <= 0 || until <= from) return { meanMinutes: 0, p95Minutes: 0 };
  const stretches: Stretch[] = [];
  for (const log of logs) {
    if (log.rate <= 0) continue;
    const reads = [...log.pollTimes.filter((t) => t > from), Math.max(endAt, until)].sort((a, b) => a - b);
    let start = from;
    for (const readAt of reads) {
      if (start >= until) break;
      const to = Math.min(readAt, until);
      if (to > start) stretches.push({ weight: log.rate / totalRate, from: start, to, readAt });
      start = readAt;
    }
  }
  const span = until - from;
  // ∫ (readAt − t) dt over [from, to).
  const waited = (s: Stretch): number => ((s.readAt - s.from) ** 2 - (s.readAt - s.to) ** 2) / 2;
  const meanMs = stretches.reduce((sum, s) => sum + s.weight * waited(s), 0) / span;
  // Share of the moments that wait longer than d: in a stretch, those before readAt − d.
  const tail = (d: number): number =>
    stretches.reduce((sum, s) => sum + s.weight * Math.max(0, Math.min(s.to, s.readAt - d) - s.from), 0) / span;
  let lo = 0;
  let hi = Math.max(0, ...stretches.map((s) => s.readAt - s.from));
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (tail(mid) > 0.05) lo = mid;
    else hi = mid;
  }
  return { meanMinutes: meanMs / 60_000, p95Minutes: hi / 60_000 };
}
