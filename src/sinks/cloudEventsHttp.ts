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

function encodeHeaderValue(value: string): string {
  return Array.from(value)
    .map((ch) => {
      const code = ch.codePointAt(0) ?? 0;
      // UTF-8 bytes via Buffer, not encodeURIComponent, which throws on a lone surrogate (an event
      // name from the service may hold one); Buffer writes it as U+FFFD.
      return code <= 0x20 || code >= 0x7f || ch === '"' || ch === '%'
        ? [...Buffer.from(ch, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('')
        : ch;
    })
    .join('');
}
