import { Webhook } from 'standardwebhooks';

const SECRET_PREFIX = 'whsec_';

/**
 * True for a Standard Webhooks secret: `whsec_` followed by base64 of at least 16 bytes. The
 * `standardwebhooks` package accepts any non-empty key, so config and `receive` check the form here.
 */
export function isWebhookSecret(value: string): boolean {
  if (!value.startsWith(SECRET_PREFIX)) return false;
  const encoded = value.slice(SECRET_PREFIX.length);
  return /^[A-Za-z0-9+/]+={0,2}$/.test(encoded) && Buffer.from(encoded, 'base64').length >= 16;
}

/**
 * The `webhook-signature` header, signed by the `standardwebhooks` package (the same one the
 * receiver verifies with): one `v1,<base64 HMAC>` per secret, separated by spaces during a
 * rotation, and a receiver accepts any of them. The package signs one key at a time; joining is ours.
 */
export function signWebhook(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  /** A string: the package signs a Buffer as its UTF-8 decoding, not its bytes. */
  body: string,
): string {
  const at = new Date(timestampSeconds * 1000);
  return secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' ');
}
