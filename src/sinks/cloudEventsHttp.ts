import { escapeTemplateValue } from './eventTemplate.js';

/**
 * The context attributes of a CloudEvent as strings, for the protocol bindings that copy them into
 * headers or properties: all but `data` and `datacontenttype`, and none without a value.
 */
export function ceAttributes(event: Record<string, unknown>): [string, string][] {
  return Object.entries(event).flatMap(([name, value]): [string, string][] =>
    name === 'data' || name === 'datacontenttype' || value === undefined || value === null
      ? []
      : [[name, typeof value === 'string' ? value : JSON.stringify(value)]],
  );
}

/**
 * CloudEvents HTTP binding, binary mode: every context attribute becomes a `ce-<name>` header.
 * Values are percent-encoded where the binding requires it (space, double quote, percent and
 * anything outside printable ASCII), so non-ASCII subjects survive HTTP header rules.
 */
export function ceBinaryHeaders(event: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(ceAttributes(event).map(([name, value]) => [`ce-${name}`, encodeHeaderValue(value)]));
}

/** What the binding percent-encodes: space, controls, `"` and all beyond ASCII (escapeTemplateValue adds `%`). */
const HEADER_FORBIDDEN = /[^\x21-\x7e]|"/;

function encodeHeaderValue(value: string): string {
  // UTF-8 bytes of each character; a lone surrogate (an event name from the service may hold one) as U+FFFD.
  return value === '' ? '' : escapeTemplateValue(value, HEADER_FORBIDDEN);
}
