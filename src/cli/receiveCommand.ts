import { parseArgs } from 'node:util';
import { ChangefeedError } from '../errors.js';
import { createLogger } from '../observe/createLogger.js';
import { isWebhookSecret } from '../sinks/standardWebhookSignature.js';
import { DEFAULT_MAX_BODY_BYTES, startWebhookReceiver, type ReceivedWebhook } from '../receiver/webhookReceiver.js';
import { terminalSafe } from './terminalText.js';
import { PORT_FLAG, requiredNumericFlag } from './numericFlag.js';
import { bindPort } from './portInUse.js';
import { onShutdownSignals } from './shutdownSignals.js';

export const RECEIVE_USAGE = `changefeed receive [--port N] [--secret whsec_...]... [--quiet] [--max-body-bytes N]
  A webhook endpoint on 127.0.0.1 that verifies Standard Webhooks signatures and prints one line
  per request (✓ verified, ✗ rejected with 401; --quiet prints none). Point a webhook sink at
  http://127.0.0.1:N/webhooks. Bodies above --max-body-bytes (16 MiB) get 413; text from requests is
  printed with control characters escaped.`;

export async function receiveCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '9000' },
      secret: { type: 'string', multiple: true },
      quiet: { type: 'boolean', default: false },
      'max-body-bytes': { type: 'string', default: String(DEFAULT_MAX_BODY_BYTES) },
    },
    strict: true,
  });
  const port = requiredNumericFlag('port', values.port, PORT_FLAG);
  const maxBodyBytes = requiredNumericFlag('max-body-bytes', values['max-body-bytes'], {
    min: 1024,
    max: 1024 ** 3,
    integer: true,
  });
  // A secret the sink could never have (the config refuses it) would reject every request as forged.
  const badSecret = (values.secret ?? []).findIndex((secret) => !isWebhookSecret(secret));
  if (badSecret >= 0) {
    throw new ChangefeedError(
      'USAGE',
      `--secret number ${badSecret + 1} is not a Standard Webhooks secret: "whsec_" followed by base64 of at least 16 bytes`,
    );
  }
  const receiver = await bindPort({ port, host: '127.0.0.1', setting: '--port' }, () =>
    startWebhookReceiver({
      port,
      secrets: values.secret ?? [],
      keepReceived: false,
      maxBodyBytes,
      onWebhook: values.quiet ? undefined : (r) => process.stdout.write(`${describeWebhook(r)}\n`),
    }),
  );
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
  const verdict = r.verified
    ? 'signature verified'
    : r.verifyError
      ? `REJECTED: ${r.verifyError}`
      : 'not verified (no secret given)';
  // Everything but the mark comes from the request: escaped, so it cannot forge a line.
  return `${r.verified ? '✓' : '✗'} ${terminalSafe(`${r.id} ${type} (${verdict})`)}`;
}
