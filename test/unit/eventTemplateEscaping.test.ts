import { describe, expect, it } from 'vitest';
import { escapeTemplateValue } from '../../src/sinks/eventTemplate.js';
import { renderSubject } from '../../src/sinks/natsSink.js';
import { routingKeyFor } from '../../src/sinks/rabbitmqRoutingKey.js';
import { renderKey } from '../../src/sinks/redisStreamsSink.js';
import { renderTopic } from '../../src/sinks/mqttSink.js';
import { sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';

describe('escapeTemplateValue', () => {
  it.each([
    ['', /[.]/, '_'],
    ['plain', /[.]/, 'plain'],
    ['a.b', /[.]/, 'a%2Eb'],
    ['100%', /[.]/, '100%25'],
    ['line\r\nbreak', /[\r\n]/, 'line%0D%0Abreak'],
    ['é.', /[^A-Za-z0-9]/, '%C3%A9%2E'],
    ['lone\ud800', /[.]/, 'lone\ufffd'],
  ])('%j with %s -> %j', (value, forbidden, expected) => {
    expect(escapeTemplateValue(value, forbidden)).toBe(expected);
  });

  it('keeps distinct values distinct', () => {
    expect(escapeTemplateValue('a_b', /[.]/)).not.toBe(escapeTemplateValue('a.b', /[.]/));
    expect(escapeTemplateValue('a%2Eb', /[.]/)).not.toBe(escapeTemplateValue('a.b', /[.]/));
  });
});

const event = (name: string, objectId = 'car_1') => ({
  tenant: 'acme',
  type: `com.skills.changefeed.career.${name}`,
  log: 'career' as const,
  objectId,
});

describe('names built from hostile event data', () => {
  it('a NATS subject token holds only safe characters', () => {
    expect(renderSubject('cf.{log}.{event}.{subject}', event('a b.c*>\u0001', 'x.y'))).toBe(
      'cf.career.a%20b%2Ec%2A%3E%01.x%2Ey',
    );
  });

  it('a RabbitMQ routing key keeps the words of {type} and escapes the rest', () => {
    expect(routingKeyFor('{type}.{subject}', event('x#y', 'c.1'))).toBe('com.skills.changefeed.career.x%23y.c%2E1');
  });

  it('a RabbitMQ routing key never exceeds 255 bytes, and stays distinct', () => {
    const long = routingKeyFor('{type}', event('é'.repeat(400)));
    const other = routingKeyFor('{type}', event(`${'é'.repeat(399)}x`));
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(255);
    expect(long).not.toBe(other);
  });

  it('a Redis stream key holds no control characters', () => {
    expect(renderKey({ key: '{prefix}:{log}:{subject}', prefix: 'cf' }, event('x', 'c\r\n1'))).toBe(
      'cf:career:c%0D%0A1',
    );
  });
});

describe('names that hold the tenant', () => {
  it('every broker sink can route by {tenant}', () => {
    expect(renderSubject('cf.{tenant}.{type}', event('level_added'))).toBe(
      'cf.acme.com.skills.changefeed.career.level_added',
    );
    expect(routingKeyFor('{tenant}.{log}', event('x'))).toBe('acme.career');
    expect(renderKey({ key: '{prefix}:{tenant}:{log}', prefix: 'cf' }, event('x'))).toBe('cf:acme:career');
    expect(renderTopic({ topic: '{prefix}/{tenant}/{log}', prefix: 'cf' }, event('x'))).toBe('cf/acme/career');
  });

  it('a template naming {tenant} passes config validation for each broker sink', () => {
    for (const config of [
      { type: 'nats', servers: ['nats://127.0.0.1:4222'], subject: 'cf.{tenant}.{type}' },
      { type: 'rabbitmq', url: 'amqp://127.0.0.1', exchange: { name: 'cf' }, routingKey: '{tenant}.{type}' },
      { type: 'redis-streams', url: 'redis://127.0.0.1', key: '{prefix}:{tenant}' },
      { type: 'mqtt', url: 'mqtt://127.0.0.1', topic: '{prefix}/{tenant}/{log}' },
    ]) {
      const parsed = sinkConfigSchema.safeParse({ name: 'broker', ...config });
      expect(parsed.error?.issues ?? [], config.type).toEqual([]);
    }
  });
});
