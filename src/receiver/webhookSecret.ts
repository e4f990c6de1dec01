import { randomBytes } from 'node:crypto';

/**
 * A fresh Standard Webhooks signing secret: `whsec_` and the base64 of 24 random bytes, the form
 * the `standardwebhooks` library decodes (and Svix issues). 24 bytes are 192 bits, above the 16
 * bytes a webhook sink's config accepts, and encode to base64 without padding.
 */
export function generateWebhookSecret(random: (size: number) => Buffer = randomBytes): string {
  return `whsec_${random(24).toString('base64')}`;
}
