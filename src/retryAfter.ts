/** The longest wait a Retry-After header may impose, so a bogus one cannot stall anything for days. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/** An HTTP-date (RFC 9110 5.6.7): IMF-fixdate, or the obsolete RFC 850 and asctime forms. */
const HTTP_DATE = /^\s*(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /;

/**
 * Retry-After as seconds: delay-seconds, or an HTTP-date. The date is measured from `answerDate`
 * (the same answer's Date header, dateHeader) when there is one: the sender wrote both by its own
 * clock, which may be far from ours; else from `now` (the caller's injected clock). Anything else
 * ("-5", "soon", a bare year, which Date.parse would accept) is undefined, so the caller's
 * fallback applies rather than no pause at all. Not capped here: the read budget clamps to its
 * own setting, sinks to MAX_RETRY_AFTER_MS.
 */
export function parseRetryAfter(value: string | undefined, now: number, answerDate?: number): number | undefined {
  if (value === undefined) return undefined;
  if (/^\s*\d{1,15}\s*$/.test(value)) return Number.parseInt(value, 10);
  if (!HTTP_DATE.test(value)) return undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - (answerDate ?? now)) / 1000));
}

/** A Date header as epoch ms; undefined when absent or not a date. */
export function dateHeader(value: string | undefined): number | undefined {
  const date = value === undefined ? Number.NaN : Date.parse(value);
  return Number.isNaN(date) ? undefined : date;
}
