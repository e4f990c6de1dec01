/**
 * Text from the network (a webhook body, an entry the service sent) made safe for a terminal:
 * control characters, ANSI escape sequences included, are shown as \\uXXXX escapes, so untrusted
 * text can neither move the cursor, recolour nor overwrite what the command itself printed.
 * Newlines too: untrusted text is one line, so it cannot start a line of its own. Apply it to
 * each untrusted piece, not to a whole multi-line report.
 */
export function terminalSafe(text: string): string {
  const escape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, escape);
}
