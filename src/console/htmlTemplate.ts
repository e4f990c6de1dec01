import escapeHtml from 'escape-html';
import { scrubSecrets } from '../secrets/secretRegistry.js';

/** Markup that is already safe: written by the console's own templates, values escaped. */
export class SafeHtml {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/**
 * A template of markup: every interpolated value is escaped (`<`, `>`, `&`, `"`, `'`), so a tenant
 * name or an event field holding `<script>` reads as text, and every registered secret (errors
 * recorded by sinks and polls may quote one, or a URL with credentials) is cut out. SafeHtml and
 * arrays of it are put in as they are; null, undefined and false put nothing in.
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? '');
  });
  return new SafeHtml(out);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  // Scrubbed before it is escaped: a secret holding `&`, `<` or a quote no longer reads as itself after.
  if (typeof value === 'string') return escapeHtml(scrubSecrets(value));
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  throw new TypeError(`html: a ${typeof value} is neither markup nor text`);
}
