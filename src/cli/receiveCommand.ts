import { parseArgs } from 'node:util';
import { createLogger } from '../observe/createLogger.js';
import { startWebhookReceiver, type ReceivedWebhook } from '../receiver/webhookReceiver.js';
import { onShutdownSignals } from './shutdownSignals.js';

export const RECEIVE_USAGE = `changefeed receive [--port N] [--secret whsec_...]... [--quiet]
  A webhook endpoint on 127.0.0.1 that verifies Standard Webhooks signatures and prints one line
  per request (✓ verified, ✗ rejected with 401; --quiet prints none). Point a webhook sink at
  http://127.0.0.1:N/webhooks.`;

export async function receiveCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { port: { type: 'string', default: '9000' }, secret: { type: 'string', multiple: true }, quiet: { type: 'boolean', default: false } },
    strict: true,
  });
  const receiver = await startWebhookReceiver({
    port: Number(values.port),
    secrets: values.secret ?? [],
    keepReceived: false,
    onWebhook: values.quiet ? undefined : (r) => process.stdout.write(`${describeWebhook(r)}\n`),
  });
  process.stdout.write(`receiving webhooks at ${receiver.url}\n`);
  onShutdownSignals(() => receiver.close(), createLogger({}), 5_000);
  return new Promise<number>(() => undefined);
}

/** `✓ career_3q2… com.skills.changefeed.career.level_added (signature verified)` */
export function describeWebhook(r: ReceivedWebhook): string {
  let type = String(r.headers['ce-type'] ?? '');
  if (!type) {
    try {
      const parsed = (JSON.parse(r.body) as { type?: unknown }).type;
      type = typeof parsed === 'string' ? parsed : '(no type)';
    } catch {
      type = '(body is not JSON)';
    }
  }
  const verdict = r.verified ? 'signature verified' : r.verifyError ? `REJECTED: ${r.verifyError}` : 'not verified (no secret given)';
  return `${r.verified ? '✓' : '✗'} ${r.id} ${type} (${verdict})`;
}
