import { createHash } from 'node:crypto';
import { escapeTemplateValue, renderTemplate, templateValues } from './eventTemplate.js';
import type { OutboundEvent } from '../sinkContract/sink.js';

/** Topic-exchange separators and wildcards, and control characters: %-escaped in values from event data. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const ROUTING_WORD_FORBIDDEN = /[.*#\u0000-\u001f\u007f-\u009f]/;
/** AMQP 0-9-1 limits a routing key (a short string) to 255 bytes. */
const MAX_ROUTING_KEY_BYTES = 255;

/**
 * The routing key of an event. `{type}` keeps its dots (one word per part); every other value is
 * one word. A key longer than AMQP allows is cut and given a hash of the whole, so it stays
 * distinct and deterministic instead of failing the channel.
 */
export function routingKeyFor(
  template: string,
  event: Pick<OutboundEvent, 'tenant' | 'type' | 'log' | 'objectId'>,
): string {
  const word = (value: string): string => escapeTemplateValue(value, ROUTING_WORD_FORBIDDEN);
  const key = renderTemplate(template, templateValues(event), (value, name) =>
    name === 'type' ? value.split('.').map(word).join('.') : word(value),
  );
  if (Buffer.byteLength(key) <= MAX_ROUTING_KEY_BYTES) return key;
  const digest = createHash('sha256').update(key).digest('hex').slice(0, 16);
  return `${Buffer.from(key)
    .subarray(0, MAX_ROUTING_KEY_BYTES - 17)
    .toString('utf8')
    .replace(/\uFFFD$/, '')}~${digest}`;
}
