import type { PollHour } from '../poll/pollHours.js';
import { POLL_HOURS_KEPT } from '../poll/pollHours.js';
import { html, type SafeHtml } from './htmlTemplate.js';

const HOUR_MS = 3_600_000;
const WIDTH = 480;
const HEIGHT = 120;
const AXIS = 20;

/** One hour of the chart: the bucket recorded for it, or none (nothing polled then). */
export interface ChartSlot {
  hour: number;
  bucket: PollHour | undefined;
}

/** The 24 hours up to the one holding `now`, oldest first, each with its bucket if any. */
export function lastDaySlots(hours: readonly PollHour[], now: number): ChartSlot[] {
  const latest = Math.floor(now / HOUR_MS) * HOUR_MS;
  const byHour = new Map(hours.map((b) => [b.hour, b]));
  return Array.from({ length: POLL_HOURS_KEPT }, (_, i) => {
    const hour = latest - (POLL_HOURS_KEPT - 1 - i) * HOUR_MS;
    return { hour, bucket: byHour.get(hour) };
  });
}

/**
 * Freshness over the last day as an inline SVG bar chart: per hour, how far behind the stalest log
 * polled then was. No script and no style attribute (the console's Content-Security-Policy
 * allows neither inline): colours come from console.css through classes.
 */
export function freshnessChart(slots: readonly ChartSlot[]): SafeHtml {
  const lags = slots.map((s) => s.bucket?.worstLagSeconds ?? null);
  const top = Math.max(60, ...lags.map((l) => l ?? 0));
  const slotWidth = WIDTH / slots.length;
  const bars = slots.map((slot, i) => {
    const lag = slot.bucket?.worstLagSeconds;
    if (lag === undefined || lag === null) return html``;
    const h = Math.max(1, ((HEIGHT - AXIS) * lag) / top);
    const failed = (slot.bucket?.failedPolls ?? 0) > 0;
    const failures = failed ? `, ${slot.bucket?.failedPolls} failed` : '';
    const polls = slot.bucket?.polls ?? 0;
    const title = html`${hourLabel(slot.hour)}: ${formatSeconds(lag)} behind at worst, ${polls} polls${failures}`;
    return bar(failed ? 'bar bar-failed' : 'bar', i * slotWidth, slotWidth, h, title);
  });
  return chartFrame(
    'freshness-title',
    `Freshness, last 24 hours: worst lag per hour (top of the scale ${formatSeconds(top)})`,
    slots,
    html`${bars}`,
  );
}

/** Read budget use over the last day: requests per hour as bars, the allowance as a line. */
export function budgetChart(slots: readonly ChartSlot[]): SafeHtml {
  const top = Math.max(10, ...slots.map((s) => Math.max(s.bucket?.requests ?? 0, s.bucket?.allowancePerHour ?? 0)));
  const slotWidth = WIDTH / slots.length;
  const scale = (n: number) => ((HEIGHT - AXIS) * n) / top;
  const parts = slots.map((slot, i) => {
    const b = slot.bucket;
    if (!b) return html``;
    const h = Math.max(b.requests > 0 ? 1 : 0, scale(b.requests));
    const x = i * slotWidth;
    const allowance =
      b.allowancePerHour === null
        ? html``
        : html`<line
            class="allowance"
            x1="${x.toFixed(1)}"
            x2="${(x + slotWidth).toFixed(1)}"
            y1="${(HEIGHT - AXIS - scale(b.allowancePerHour)).toFixed(1)}"
            y2="${(HEIGHT - AXIS - scale(b.allowancePerHour)).toFixed(1)}"
          ></line>`;
    const allowed = b.allowancePerHour ?? 'an unknown number';
    const title = html`${hourLabel(slot.hour)}: ${b.requests} requests of ${allowed} allowed`;
    return html`${bar('bar bar-budget', x, slotWidth, h, title)}${allowance}`;
  });
  return chartFrame(
    'budget-title',
    `Read budget, last 24 hours: requests per hour against the allowance (top of the scale ${top})`,
    slots,
    html`${parts}`,
  );
}

/**
 * One hour's bar, `h` high from the axis, with its tooltip. The tooltip comes as markup so that
 * only its values are scrubbed of secrets: its counts and its own words are never cut.
 */
function bar(className: string, x: number, slotWidth: number, h: number, title: SafeHtml): SafeHtml {
  return html`<rect
    class="${className}"
    x="${(x + 1).toFixed(1)}"
    y="${(HEIGHT - AXIS - h).toFixed(1)}"
    width="${(slotWidth - 2).toFixed(1)}"
    height="${h.toFixed(1)}"
    ><title>${title}</title></rect
  >`;
}

function chartFrame(id: string, title: string, slots: readonly ChartSlot[], body: SafeHtml): SafeHtml {
  const first = slots[0];
  const last = slots.at(-1);
  return html`<svg
    class="chart"
    viewBox="0 0 ${WIDTH} ${HEIGHT}"
    role="img"
    aria-labelledby="${id}"
    preserveAspectRatio="none"
  >
    <title id="${id}">${title}</title>
    <line class="axis" x1="0" x2="${WIDTH}" y1="${HEIGHT - AXIS}" y2="${HEIGHT - AXIS}"></line>
    ${body}
    <text class="axis-label" x="2" y="${HEIGHT - 5}">${first ? hourLabel(first.hour) : ''}</text>
    <text class="axis-label" x="${WIDTH - 2}" y="${HEIGHT - 5}" text-anchor="end">
      ${last ? hourLabel(last.hour) : ''}
    </text>
  </svg>`;
}

/** `14:00Z`: hours are UTC, as every time the console shows. */
export function hourLabel(hour: number): string {
  return `${new Date(hour).toISOString().slice(11, 16)}Z`;
}

/** `45 s`, `12 min`, `3.5 h`. */
export function formatSeconds(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7_200) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3_600).toFixed(1)} h`;
}
