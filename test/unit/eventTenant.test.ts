import { describe, expect, it } from 'vitest';
import { buildCloudEvent, eventsConfigSchema } from '../../src/events/cloudEvent.js';
import { withTenantAttribute } from '../../src/events/eventTenant.js';

const built = buildCloudEvent(
  {
    tenant: 'acme',
    log: 'career',
    objectId: 'car_1',
    entry: { id: 'act_1', event: 'level_added', performedAt: '2026-01-01T00:00:00Z' },
    baseUrl: 'https://skills.example',
  },
  eventsConfigSchema.parse({}),
);
const { tenant: _tenant, ...earlier } = built;

describe('withTenantAttribute', () => {
  it.each([
    ['an event that carries its tenant, byte for byte', JSON.stringify(built), JSON.stringify(built)],
    [
      "an event of the earlier layout gets the store's tenant second, the rest unchanged",
      JSON.stringify(earlier),
      JSON.stringify(built),
    ],
    [
      'an event of another layout is parsed and gets the tenant',
      '{"id":"x","specversion":"1.0","data":{}}',
      '{"specversion":"1.0","tenant":"acme","id":"x","data":{}}',
    ],
    ['a tenant already there, elsewhere, is kept', '{"id":"x","tenant":"beta"}', '{"id":"x","tenant":"beta"}'],
    ['text that is not a JSON object is left alone', 'not json', 'not json'],
    ['a JSON array is left alone', '[1]', '[1]'],
  ])('%s', (_case, json, expected) => {
    expect(withTenantAttribute(json, 'acme')).toBe(expected);
  });

  it('the builder writes the tenant second, where the fast path looks for it', () => {
    expect(Object.keys(built).slice(0, 2)).toEqual(['specversion', 'tenant']);
    expect(JSON.stringify(built).startsWith('{"specversion":"1.0","tenant":"acme",')).toBe(true);
  });

  it('a tenant name is written as a JSON string, whatever it holds', () => {
    const stamped = withTenantAttribute(JSON.stringify(earlier), 'a"b\\c');
    expect((JSON.parse(stamped) as { tenant: string }).tenant).toBe('a"b\\c');
  });
});
