/**
 * Text from the network (a webhook body, an entry the service sent) made safe for a terminal:
 * control characters, ANSI escape sequences included, are shown as \\uXXXX escapes, so untrusted
 * text can neither move the cursor, recolour nor overwrite what the command itself printed.
 * Newlines and tabs that the command itself writes are kept.
 */
export function terminalSafe(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
