import { describe, expect, it } from 'vitest';
import { sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';

/** The issues config loading reports for one sink, without throwing. */
function issuesOf(sink: Record<string, unknown>): { path: string; message: string }[] {
  const result = sinkConfigSchema.safeParse({ name: 's', ...sink });
  return result.success ? [] : result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
}

describe('sink URLs a hand typed or hostile config holds', () => {
  it.each([
    { type: 'redis-streams', url: 'redis://[::1' },
    { type: 'mqtt', url: 'mqtt://[broker' },
    { type: 'rabbitmq', url: 'amqp://host:99999', exchange: { name: 'x' } },
    { type: 'postgres', url: 'nope', passwordFile: '/run/secrets/pg' },
  ])('reports a URL that does not parse on the url field of $type, not as a crash', (sink) => {
    expect(issuesOf(sink)).toContainEqual(expect.objectContaining({ path: 'url' }));
  });

  it('refuses a postgres password that is not valid percent-encoding, without showing it', () => {
    const issues = issuesOf({ type: 'postgres', url: 'postgres://bob:se%zzcret@127.0.0.1:5432/test' });
    expect(issues).toEqual([{ path: 'url', message: expect.stringContaining('write a literal % as %25') as string }]);
    expect(JSON.stringify(issues)).not.toContain('se%zzcret');
    expect(issuesOf({ type: 'postgres', url: 'postgres://bob:se%25cret@127.0.0.1:5432/test' })).toEqual([]);
  });

  it('refuses a rabbitmq vhost that is not valid percent-encoding', () => {
    const issues = issuesOf({ type: 'rabbitmq', url: 'amqp://127.0.0.1:5672/50%', exchange: { name: 'x' } });
    expect(issues).toEqual([{ path: 'url', message: expect.stringContaining('vhost') as string }]);
    expect(issuesOf({ type: 'rabbitmq', url: 'amqp://127.0.0.1:5672/%2F', exchange: { name: 'x' } })).toEqual([]);
  });
});
