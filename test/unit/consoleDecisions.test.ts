import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseReplayForm, parseTailType } from '../../src/console/consoleForms.js';
import { perMinute } from '../../src/console/deliveryRates.js';
import { budgetChart, freshnessChart, lastDaySlots } from '../../src/console/hourCharts.js';
import { html } from '../../src/console/htmlTemplate.js';
import { registerSecret } from '../../src/secrets/secretRegistry.js';

const T = Date.UTC(2026, 10, 20, 12, 0, 0);
const form = { sink: 'hook', since: '2026-11-20T00:00:00Z', until: '', log: '', type: '' };

describe('the console: replay form', () => {
  it.each([
    { name: 'a sink and a start', over: {}, range: { since: Date.UTC(2026, 10, 20) } },
    {
      name: 'every field',
      over: { until: '2026-11-20T06:30:00.500+01:00', log: 'skill', type: 'com.*.skill.?' },
      range: {
        since: Date.UTC(2026, 10, 20),
        until: Date.UTC(2026, 10, 20, 5, 30, 0, 500),
        log: 'skill',
        type: 'com.*.skill.?',
      },
    },
  ])('takes $name', ({ over, range }) => {
    expect(parseReplayForm({ ...form, ...over }, ['hook'])).toEqual({
      request: {
        sink: 'hook',
        range: { until: undefined, log: undefined, type: undefined, ...range },
      },
    });
  });

  it.each([
    { over: { sink: '' }, field: 'sink', says: 'choose a sink' },
    { over: { sink: 'other' }, field: 'sink', says: 'no sink named "other" here (sinks: hook)' },
    { over: { since: '' }, field: 'since', says: 'give the start' },
    { over: { since: '2026-11-20T00:00:00' }, field: 'since', says: 'not an ISO 8601 time with a zone' },
    { over: { since: 'yesterday' }, field: 'since', says: 'not an ISO 8601 time with a zone' },
    { over: { until: '2026-11-19T00:00:00Z' }, field: 'until', says: 'must be after since' },
    { over: { log: 'careers' }, field: 'log', says: 'must be one of career, skill, identity_provider' },
    { over: { type: '<script>' }, field: 'type', says: 'must be a glob' },
    { over: { type: 'a%b' }, field: 'type', says: 'must be a glob' },
  ])('names $field for $over', ({ over, field, says }) => {
    const parsed = parseReplayForm({ ...form, ...over }, ['hook']);
    expect('errors' in parsed && parsed.errors).toEqual([{ field, message: expect.stringContaining(says) as string }]);
  });

  it.each([
    [null, { type: undefined }],
    ['  ', { type: undefined }],
    ['*.career.*', { type: '*.career.*' }],
  ])('takes the tail type %j', (value, expected) => {
    expect(parseTailType(value)).toEqual(expected);
  });

  it('names the tail type that is no glob', () => {
    expect(parseTailType('a b')).toEqual({
      error: { field: 'type', message: expect.stringContaining('glob') as string },
    });
  });
});

describe('the console: delivered per minute', () => {
  it.each([
    { name: 'no samples', samples: [], rate: null },
    { name: 'one sample', samples: [{ at: T, delivered: 5 }], rate: null },
    {
      name: 'samples too close together',
      samples: [
        { at: T - 1_000, delivered: 5 },
        { at: T, delivered: 9 },
      ],
      rate: null,
    },
    {
      name: 'a rise over 30 s',
      samples: [
        { at: T - 30_000, delivered: 10 },
        { at: T, delivered: 40 },
      ],
      rate: 60,
    },
    {
      name: 'only the samples of the last two minutes',
      samples: [
        { at: T - 600_000, delivered: 0 },
        { at: T - 60_000, delivered: 100 },
        { at: T, delivered: 130 },
      ],
      rate: 30,
    },
    {
      name: 'a count that went down',
      samples: [
        { at: T - 30_000, delivered: 40 },
        { at: T, delivered: 10 },
      ],
      rate: null,
    },
  ])('$name', ({ samples, rate }) => {
    expect(perMinute(samples, T)).toBe(rate);
  });
});

describe('the console: charts and markup', () => {
  it('lays the last 24 hours out oldest first, each with its bucket or none', () => {
    const bucket = {
      hour: T - 3_600_000,
      requests: 3,
      allowancePerHour: 900,
      polls: 1,
      failedPolls: 0,
      events: 2,
      worstLagSeconds: 5,
    };
    const slots = lastDaySlots([bucket, { ...bucket, hour: T - 30 * 3_600_000 }], T + 59 * 60_000);
    expect(slots).toHaveLength(24);
    expect(slots[0]?.hour).toBe(T - 23 * 3_600_000);
    expect(slots.at(-1)).toEqual({ hour: T, bucket: undefined });
    expect(slots.at(-2)).toEqual({ hour: T - 3_600_000, bucket });
    expect(slots.filter((s) => s.bucket)).toHaveLength(1);
  });

  // Counts and the tooltip's own words are not values that can hold a secret: only its text values
  // go through the scrubber, as everywhere else in the console's markup.
  it("scrubs a bar's tooltip values, never its counts or its own words", () => {
    const count = 100_000_000_000 + randomInt(900_000_000_000);
    registerSecret(String(count));
    const bucket = {
      hour: T,
      requests: count,
      allowancePerHour: null,
      polls: count,
      failedPolls: 0,
      events: 0,
      worstLagSeconds: 5,
    };
    const slots = lastDaySlots([bucket], T);
    expect(freshnessChart(slots).text).toContain(`<title>12:00Z: 5 s behind at worst, ${count} polls</title>`);
    expect(budgetChart(slots).text).toContain(`<title>12:00Z: ${count} requests of an unknown number allowed</title>`);
  });

  it('escapes every value it is given, and puts markup of its own in as it is', () => {
    const name = `<script>alert("x")</script>&'`;
    expect(html`<p title="${name}">${name}${html`<b>${1}</b>`}${[html`<i></i>`, '<u>']}${null}${false}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">' +
        '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;<b>1</b><i></i>&lt;u&gt;</p>',
    );
  });
});
