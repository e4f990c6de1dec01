import { parseArgs } from 'node:util';
import { ChangefeedError } from '../errors.js';
import { createLogger } from '../observe/createLogger.js';
import { isWebhookSecret } from '../sinks/standardWebhookSignature.js';
import { DEFAULT_MAX_BODY_BYTES, startWebhookReceiver, type ReceivedWebhook } from '../receiver/webhookReceiver.js';
import { generateWebhookSecret } from '../receiver/webhookSecret.js';
import { terminalSafe } from './terminalText.js';
import { PORT_FLAG, requiredNumericFlag } from './numericFlag.js';
import { bindPort } from './portInUse.js';
import { onShutdownSignals } from './shutdownSignals.js';

export const RECEIVE_USAGE = `changefeed receive [--port N] [--secret whsec_...]... [--no-verify] [--quiet] [--max-body-bytes N]
  A webhook endpoint on 127.0.0.1 that verifies Standard Webhooks signatures and prints one line
  per request (✓ verified, ✗ rejected with 401; --quiet prints none). Point a webhook sink at
  http://127.0.0.1:N/webhooks. Without --secret it generates a whsec_ secret and prints it, to set
  as the sink's secret; --no-verify accepts unsigned requests instead. Bodies above
  --max-body-bytes (16 MiB) get 413; text from requests is printed with control characters escaped.`;

export async function receiveCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '9000' },
      secret: { type: 'string', multiple: true },
      'no-verify': { type: 'boolean', default: false },
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
  const noVerify = values['no-verify'];
  if (noVerify && values.secret !== undefined)
    throw new ChangefeedError('USAGE', '--no-verify accepts unsigned requests; it cannot be combined with --secret');
  // An endpoint that accepts anything would pass a sink whose signing is broken: without a secret
  // one is made up and printed for the sink's config, and accepting unsigned requests is asked for.
  const generated = noVerify || values.secret !== undefined ? undefined : generateWebhookSecret();
  const secrets = generated !== undefined ? [generated] : (values.secret ?? []);
  const receiver = await bindPort({ port, host: '127.0.0.1', setting: '--port' }, () =>
    startWebhookReceiver({
      port,
      secrets,
      keepReceived: false,
      maxBodyBytes,
      onWebhook: values.quiet ? undefined : (r) => process.stdout.write(`${describeWebhook(r)}\n`),
    }),
  );
  if (generated !== undefined) process.stdout.write(`Your webhook signing secret is ${generated} (^C to quit)\n`);
  if (noVerify) process.stdout.write('--no-verify: signatures are not checked; every request is accepted\n');
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
      : 'not verified: --no-verify';
  // Everything but the mark comes from the request: escaped, so it cannot forge a line.
  return `${r.verified ? '✓' : '✗'} ${terminalSafe(`${r.id} ${type} (${verdict})`)}`;
}
