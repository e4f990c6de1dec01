import { createHmac } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** True for a Standard Webhooks secret: `whsec_` followed by base64 of at least 16 bytes. */
export function isWebhookSecret(value: string): boolean {
  if (!value.startsWith(SECRET_PREFIX)) return false;
  const encoded = value.slice(SECRET_PREFIX.length);
  return /^[A-Za-z0-9+/]+={0,2}$/.test(encoded) && Buffer.from(encoded, 'base64').length >= 16;
}

/**
 * The `webhook-signature` header of the Standard Webhooks specification: for each secret,
 * `v1,` + base64 HMAC-SHA256 over `<id>.<timestamp>.<body>` keyed with the secret's decoded bytes;
 * several signatures (a rotation) are separated by spaces, and a receiver accepts any of them.
 */
export function signWebhook(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string | Buffer,
): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
      const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.`).update(body).digest('base64');
      return `v1,${mac}`;
    })
    .join(' ');
}
