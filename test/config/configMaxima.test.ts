import { describe, expect, it } from 'vitest';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';

const BASE = { api: { baseUrl: 'https://skills.example.com', apiKey: 'sim_live_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' } };
const fileSink = (delivery: Record<string, unknown>) => ({
  sinks: [{ name: 'out', type: 'file', path: '/tmp/x.jsonl', delivery }],
});

// A configured delay above 2^31 ms overflowed Node timers (a busy loop of TimeoutOverflowWarnings):
// every duration in the config has a maximum, and the error names the field.
describe('durations in the config have maxima', () => {
  it.each([
    ['sinks.0.delivery.retry.maxDelayMs', fileSink({ retry: { maxDelayMs: 2 ** 31 } })],
    ['sinks.0.delivery.retry.initialDelayMs', fileSink({ retry: { initialDelayMs: 2 ** 31 } })],
    ['sinks.0.delivery.circuitBreaker.maxCooldownMs', fileSink({ circuitBreaker: { maxCooldownMs: 2 ** 31 } })],
    ['watch.pollIntervalSeconds', { watch: { pollIntervalSeconds: 3e6 } }],
    ['watch.schedule.maxIntervalMinutes', { watch: { schedule: { maxIntervalMinutes: 1e9 } } }],
    ['budget.retryAfterFallbackSeconds', { budget: { retryAfterFallbackSeconds: 1e9 } }],
    ['budget.maxServerPauseSeconds', { budget: { maxServerPauseSeconds: 1e9 } }],
    ['http.sinkGraceSeconds', { http: { sinkGraceSeconds: 1e9 } }],
  ])('%s', (path, extra) => {
    const result = appConfigSchema.safeParse({ ...BASE, ...fileSink({}), ...extra });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.path.join('.'))).toContain(path);
  });

  it('accepts the defaults', () => {
    expect(appConfigSchema.safeParse({ ...BASE, ...fileSink({}) }).success).toBe(true);
  });
});
