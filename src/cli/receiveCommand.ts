import type { Command } from 'commander';
import { ChangefeedError } from '../errors.js';
import { createLogger } from '../observe/createLogger.js';
import { isWebhookSecret } from '../sinks/standardWebhookSignature.js';
import { DEFAULT_MAX_BODY_BYTES, startWebhookReceiver, type ReceivedWebhook } from '../receiver/webhookReceiver.js';
import { generateWebhookSecret } from '../receiver/webhookSecret.js';
import { terminalSafe } from './terminalText.js';
import { logDestination, writeLine, type CliIo } from './cliIo.js';
import type { CommandHost } from './commandLine.js';
import { numberIn, PORT } from './optionParsers.js';
import { bindPort } from './portInUse.js';
import { untilStopped } from './shutdownSignals.js';

export function defineReceiveCommand(program: Command, host: CommandHost): void {
  program
    .command('receive')
    .summary('a local webhook endpoint that verifies signatures and prints each request')
    .description(
      `A webhook endpoint on 127.0.0.1 that verifies Standard Webhooks signatures and prints one line per request (✓ verified, ✗ rejected with 401; --quiet prints none). Point a webhook sink at http://127.0.0.1:N/webhooks. Without --secret it generates a whsec_ secret and prints it, to set as the sink's secret; --no-verify accepts unsigned requests instead. Bodies above --max-body-bytes (16 MiB) get 413; text from requests is printed with control characters escaped.`,
    )
    .option('--port <n>', 'the port on 127.0.0.1 (0: any free one)', numberIn(PORT), 9000)
    .option('--secret <whsec_...>', 'a signing secret to verify with (repeat for several)', collect, [])
    .option('--no-verify', 'accept unsigned requests (no secret is generated)')
    .option('--quiet', 'print no line per request', false)
    .option(
      '--max-body-bytes <n>',
      'larger bodies get 413',
      numberIn({ min: 1024, max: 1024 ** 3, integer: true }),
      DEFAULT_MAX_BODY_BYTES,
    )
    .action(host.run((options: ReceiveOptions) => receiveCommand(options, host.io)));
}

interface ReceiveOptions {
  port: number;
  secret: string[];
  /** False with --no-verify. */
  verify: boolean;
  quiet: boolean;
  maxBodyBytes: number;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

async function receiveCommand(values: ReceiveOptions, io: CliIo): Promise<number> {
  const { port, maxBodyBytes } = values;
  // Before the port is bound, so a bad CHANGEFEED_LOG_LEVEL leaves nothing open.
  const logger = createLogger({ env: io.env, destination: logDestination(io) });
  // A secret the sink could never have (the config refuses it) would reject every request as forged.
  const badSecret = (values.secret ?? []).findIndex((secret) => !isWebhookSecret(secret));
  if (badSecret >= 0) {
    throw new ChangefeedError(
      'USAGE',
      `--secret number ${badSecret + 1} is not a Standard Webhooks secret: "whsec_" followed by base64 of at least 16 bytes`,
    );
  }
  const noVerify = !values.verify;
  if (noVerify && values.secret.length > 0)
    throw new ChangefeedError('USAGE', '--no-verify accepts unsigned requests; it cannot be combined with --secret');
  // An endpoint that accepts anything would pass a sink whose signing is broken: without a secret
  // one is made up and printed for the sink's config, and accepting unsigned requests is asked for.
  const generated = noVerify || values.secret.length > 0 ? undefined : generateWebhookSecret();
  const secrets = generated !== undefined ? [generated] : values.secret;
  const receiver = await bindPort({ port, host: '127.0.0.1', setting: '--port' }, () =>
    startWebhookReceiver({
      port,
      secrets,
      maxBodyBytes,
      onWebhook: values.quiet ? undefined : (r) => writeLine(io.stdout, describeWebhook(r)),
    }),
  );
  if (generated !== undefined) writeLine(io.stdout, `Your webhook signing secret is ${generated} (^C to quit)`);
  if (noVerify) writeLine(io.stdout, '--no-verify: signatures are not checked; every request is accepted');
  writeLine(io.stdout, `receiving webhooks at ${receiver.url}`);
  return untilStopped(io.signal, () => receiver.close(), logger, 5_000);
}

/** `✓ career_3q2… com.skills.changefeed.career.level_added (signature verified)` */
function describeWebhook(r: ReceivedWebhook): string {
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
