import { z } from 'zod';
import type { OutboundEvent } from '../sinkContract/sink.js';

/**
 * Templates that name where an event goes (NATS subject, routing key, stream key, MQTT topic).
 * Placeholders: `{prefix}` (the sink's own prefix, where it has one), `{tenant}` the company the
 * event belongs to (`default` for a single-company config), `{type}` the CloudEvent type,
 * `{log}` career, skill or identity_provider, `{event}` the event name, `{subject}` the career or
 * skill id ('' for the identity-provider log). Each sink escapes values for its destination.
 */
export type TemplatePlaceholder = 'prefix' | 'tenant' | 'type' | 'log' | 'event' | 'subject';

const PLACEHOLDER = /\{([^{}]*)\}/g;

/**
 * A template string that may use only `allowed` placeholders; `check` validates what is left once
 * each placeholder is replaced by a sample value, and returns a message when that is wrong.
 */
export function templateSchema(
  allowed: readonly TemplatePlaceholder[],
  check?: (sample: string) => string | undefined,
) {
  return z.string().superRefine((template, ctx) => {
    const unknown = [...template.matchAll(PLACEHOLDER)]
      .map((m) => m[1] ?? '')
      .filter((p) => !(allowed as readonly string[]).includes(p));
    if (unknown.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `unknown placeholder {${unknown[0]}}; use ${allowed.map((p) => `{${p}}`).join(', ')}`,
      });
      return;
    }
    const problem = check?.(template.replace(PLACEHOLDER, 'x'));
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
}

/** The raw placeholder values of an event. */
export function templateValues(
  event: Pick<OutboundEvent, 'tenant' | 'type' | 'log' | 'objectId'>,
  prefix = '',
): Record<TemplatePlaceholder, string> {
  const { log } = event;
  // The type is `<typePrefix>.<log>.<event>` and the prefix may hold dots: the event name starts after the last `.<log>.`.
  const marker = event.type.lastIndexOf(`.${log}.`);
  return {
    prefix,
    tenant: event.tenant,
    type: event.type,
    log,
    event: marker < 0 ? event.type : event.type.slice(marker + log.length + 2),
    subject: event.objectId,
  };
}

/** Replaces each placeholder by its value, escaped for the destination. */
export function renderTemplate(
  template: string,
  values: Record<TemplatePlaceholder, string>,
  escape: (value: string, name: TemplatePlaceholder) => string = (value) => value,
): string {
  return template.replace(PLACEHOLDER, (_, name: TemplatePlaceholder) => escape(values[name], name));
}

/**
 * Makes a value taken from event data safe inside a destination name: every character that
 * `forbidden` matches, and `%` itself, becomes its UTF-8 bytes as %XX, so distinct values stay
 * distinct and the name can be decoded. Lone surrogates (not valid UTF-8) become U+FFFD first; an
 * empty value becomes `_`. A `\r\n` or `\u0001` left in makes mosquitto drop the connection.
 */
export function escapeTemplateValue(value: string, forbidden: RegExp): string {
  if (value === '') return '_';
  const pattern = new RegExp(`${forbidden.source}|%`, 'gu');
  const wellFormed = value.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
  return wellFormed.replace(pattern, (c: string) =>
    [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}
