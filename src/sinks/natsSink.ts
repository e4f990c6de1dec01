import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import {
  connect,
  errors as natsErrors,
  headers as natsHeaders,
  nanos,
  type NatsConnection,
} from '@nats-io/transport-node';
import { isIP } from 'node:net';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { z } from 'zod';
import { deliverySchema, RETRY_DEFAULTS, sinkCommonSchema } from '../deliver/deliveryConfig.js';
import { AbortedError, describeError } from '../errors.js';
import { registerSecret } from '../observe/secretRegistry.js';
import { certAndKeyTogether, clientCertFields, readTlsFiles } from '../tlsFiles.js';
import { ceBinaryHeaders } from './cloudEventsHttp.js';
import type { OutboundEvent, Sink } from './sink.js';
import { SinkPartialFailureError, SinkUnavailableError, type ItemFailure } from './sinkErrors.js';
import {
  escapeTemplateValue,
  renderTemplate,
  templateSchema as templateSchema_,
  templateValues,
} from './eventTemplate.js';

/** What `{placeholder}` in a subject template may stand for; see renderSubject. */
export const SUBJECT_PLACEHOLDERS = ['type', 'log', 'event', 'subject'] as const;
/** A token may not be empty nor hold whitespace or the wildcards `*` and `>`. */
const SUBJECT = /^[^\s.*>]+(\.[^\s.*>]+)*$/;

const serverSchema = z.string().refine((s) => {
  try {
    const url = new URL(s.includes('://') ? s : `nats://${s}`);
    return url.protocol === 'nats:' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}, 'must be nats://host:port or host:port, without credentials (set user/password or token)');

const templateSchema = templateSchema_(SUBJECT_PLACEHOLDERS, (sample) =>
  !SUBJECT.test(sample) || /[{}]/.test(sample)
    ? 'must be a NATS subject: dot-separated non-empty tokens, no spaces, no wildcards (* >), ' +
      'braces only around placeholders'
    : undefined,
);

export const natsSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('nats'),
    servers: z
      .union([serverSchema, z.array(serverSchema).min(1)])
      .default(['nats://127.0.0.1:4222'])
      .describe(
        'NATS server URL(s), `nats://host:port`; with several, each connect tries them in random ' +
          'order until one answers.',
      ),
    user: z.string().min(1).optional().describe('User name, with `password`.'),
    password: z.string().min(1).optional().describe('Secret: password of `user`.'),
    token: z.string().min(1).optional().describe('Secret: authentication token (instead of user/password).'),
    tls: z
      .boolean()
      .default(false)
      .describe(
        'Require TLS (also implied by `caFile` or `certFile`); without it TLS is used when the server ' +
          'requires or offers it. Certificate checks stay on.',
      ),
    caFile: z
      .string()
      .min(1)
      .optional()
      .describe('PEM file of CA certificates to trust with TLS, for a server with a private CA.'),
    ...clientCertFields,
    timeoutMs: z
      .number()
      .int()
      .min(100)
      .max(120_000)
      .default(5_000)
      .describe(
        'Limit on connecting and on each publish acknowledgement; an event not acknowledged within ' +
          'it counts as failed.',
      ),
    subject: templateSchema
      .default('{type}')
      .describe(
        'Subject each event is published to. Placeholders: `{type}` the CloudEvent type ' +
          '(`<typePrefix>.<log>.<event>`, several tokens), `{log}` career, skill or ' +
          'identity_provider, `{event}` the event name, `{subject}` the career or skill id (`_` for ' +
          'the identity-provider log). Characters a token cannot hold (`.`, space, `*`, `>`) become ' +
          '`_` in placeholder values.',
      ),
    ceHeaders: z
      .boolean()
      .default(false)
      .describe(
        'Also put every CloudEvent attribute in a `ce-<name>` header (percent-encoded as in the ' +
          'HTTP binding); the body is always the whole CloudEvent JSON.',
      ),
    stream: z
      .object({
        name: z
          .string()
          .regex(/^[A-Za-z0-9_-]{1,64}$/, 'use 1-64 letters, digits, _ or -')
          .describe('JetStream stream that must capture the subjects; checked on every connect.'),
        create: z
          .boolean()
          .default(false)
          .describe('Create the stream when it does not exist. An existing stream is never changed.'),
        subjects: z
          .array(z.string().min(1))
          .min(1)
          .optional()
          .describe(
            'Subjects of a created stream; derived from the subject template when absent (placeholders ' +
              'become wildcards).',
          ),
        duplicateWindowSeconds: z
          .number()
          .int()
          .min(1)
          .max(86_400)
          .default(600)
          .describe(
            'Duplicate window of a created stream: a re-sent event id within it is dropped. Longer ' +
              'than the default retry ceiling (5 min).',
          ),
      })
      .strict()
      .optional()
      .describe('The stream the events land in. Without it, publishes go to whatever stream captures the subject.'),
    delivery: deliverySchema(RETRY_DEFAULTS),
  })
  .strict()
  .refine((c) => c.token === undefined || (c.user === undefined && c.password === undefined), {
    message: 'set either token or user/password, not both',
    path: ['token'],
  })
  .refine(...certAndKeyTogether)
  .refine((c) => (c.user === undefined) === (c.password === undefined), {
    message: 'user and password go together',
    path: ['password'],
  })
  .refine((c) => !c.stream?.create || c.stream.subjects !== undefined || streamSubjectsFor(c.subject)[0] !== '>', {
    message:
      'set stream.subjects: a subject template starting with {type} cannot be turned into stream ' +
      'subjects without capturing everything (e.g. ["com.skills.changefeed.>"])',
    path: ['stream', 'subjects'],
  });

export type NatsSinkConfig = z.infer<typeof natsSinkConfigSchema>;

/** Stream subjects that capture every subject the template can render: `{type}` spans several tokens, so it ends in `>`. */
export function streamSubjectsFor(template: string): string[] {
  const tokens: string[] = [];
  for (const token of template.split('.')) {
    if (token.includes('{type}')) return [[...tokens, '>'].join('.')];
    tokens.push(token.includes('{') ? '*' : token);
  }
  return [tokens.join('.')];
}

/** The event's subject. Placeholder values are made into valid tokens, so any event renders to a valid subject. */
export function renderSubject(template: string, event: Pick<OutboundEvent, 'type' | 'log' | 'objectId'>): string {
  // `{type}` spans several tokens: escape each, keep its dots.
  return renderTemplate(template, templateValues(event), (value, name) =>
    name === 'type' ? value.split('.').map(token).join('.') : token(value),
  );
}

/** A subject token built from event data keeps to the characters NATS recommends; the rest is %-escaped. */
function token(value: string): string {
  return escapeTemplateValue(value, /[^A-Za-z0-9_-]/);
}

/**
 * Publishes each event to JetStream with its id as `Nats-Msg-Id`, so the stream's duplicate window
 * drops re-sends, and counts a batch as written only once every publish is acknowledged (stored).
 */
export class NatsSink implements Sink {
  readonly type = 'nats';
  // One write already publishes all of its objects concurrently on the one connection; parallel
  // writes mainly help when batches hold few objects (each object's events go one ack at a time)
  // and multiply what a lost connection leaves unacknowledged. One by default, up to 4.
  readonly limits = { maxBatchSize: 500, maxInFlight: 4, defaultInFlight: 1 };
  private connection: { nc: NatsConnection; js: JetStreamClient } | undefined;
  private readonly servers: string[];

  constructor(private readonly config: NatsSinkConfig) {
    this.servers = typeof config.servers === 'string' ? [config.servers] : config.servers;
    if (config.password) registerSecret(config.password);
    if (config.token) registerSecret(config.token);
  }

  get name(): string {
    return this.config.name;
  }

  async connect(signal: AbortSignal): Promise<void> {
    if (this.connection && !this.connection.nc.isClosed()) return;
    this.connection = undefined;
    const { user, password, token, timeoutMs } = this.config;
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: this.servers,
        ...(user !== undefined ? { user, pass: password } : {}),
        ...(token !== undefined ? { token } : {}),
        ...(this.config.tls || this.config.caFile || this.config.certFile
          ? { tls: natsTlsOptions(this.config, this.servers) }
          : {}),
        name: `skills-changefeed/${this.name}`,
        timeout: timeoutMs,
        // The engine owns reconnects: with the client's own, publishes would queue up in a
        // disconnected client instead of failing fast, and a lost connection would go unreported.
        reconnect: false,
        // A peer that vanished without closing the socket is noticed within about a minute.
        pingInterval: 30_000,
        maxPingOut: 2,
        // Skips building an Error (a stack trace) for every publish.
        noAsyncTraces: true,
      });
    } catch (error) {
      throw new SinkUnavailableError(`cannot connect to NATS at ${this.servers.join(', ')}: ${describeError(error)}`, {
        cause: error,
      });
    }
    try {
      // Asks the server for the account's JetStream info: fails when JetStream is off.
      const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
      await this.checkStream(jsm);
      if (signal.aborted) throw new AbortedError('connect aborted');
    } catch (error) {
      await nc.close().catch(() => undefined);
      if (error instanceof SinkUnavailableError || error instanceof AbortedError) throw error;
      throw new SinkUnavailableError(`NATS at ${this.servers.join(', ')}: ${jetStreamMessage(error)}`, {
        cause: error,
      });
    }
    this.connection = { nc, js: jetstream(nc, { timeout: timeoutMs }) };
  }

  async write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void> {
    const connection = this.connection;
    if (!connection || connection.nc.isClosed()) {
      this.connection = undefined;
      throw new SinkUnavailableError(`not connected to NATS at ${this.servers.join(', ')}`);
    }
    // Objects are published concurrently, each object's events one after another. Pipelining an
    // object's events would let a later event be stored while an earlier one is refused (full
    // stream, leader change): the engine re-sends both, in order, but the stream drops the later
    // one's re-send as a duplicate, leaving the object out of order for good.
    const failed: { event: OutboundEvent; error: unknown }[] = [];
    let acked = 0;
    const publishInOrder = async (events: OutboundEvent[]): Promise<void> => {
      for (const event of events) {
        if (signal.aborted) return;
        try {
          // A duplicate ack counts as success: the stream already holds the id.
          await connection.js.publish(renderSubject(this.config.subject, event), event.json, {
            msgID: event.id,
            timeout: this.config.timeoutMs,
            headers: this.headersOf(event),
          });
          acked++;
        } catch (error) {
          // The rest of this object's events stay unsent and unlisted: the engine holds back every
          // event behind a failed one of its object and sends it later, without counting an attempt.
          failed.push({ event, error });
          return;
        }
      }
    };
    await untilAborted(Promise.all([...groupByKey(batch).values()].map(publishInOrder)), signal);
    if (failed.length === 0) return;
    const errors = failed.map((f) => f.error);
    if (errors.some(isConnectionLost) || connection.nc.isClosed()) {
      await this.close();
      throw new SinkUnavailableError(
        `connection to NATS at ${this.servers.join(', ')} lost with ${batch.length - acked} of ${batch.length} events unacknowledged`,
      );
    }
    const noStream = failed.find((f) => isNoResponders(f.error));
    if (noStream) {
      throw new SinkUnavailableError(
        `no JetStream stream captures subject ${renderSubject(this.config.subject, noStream.event)}: ` +
          `create a stream for it, or set stream.create: true (with stream.name) so the sink ` +
          `creates one`,
      );
    }
    if (acked === 0 && errors.every((e) => e instanceof natsErrors.TimeoutError)) {
      // Not one ack came back: a connection that delivers nothing is as good as lost. Dropping it
      // makes the engine reconnect instead of retrying into a dead socket.
      await this.close();
      throw new SinkUnavailableError(
        `NATS at ${this.servers.join(', ')} acknowledged none of ${failed.length} publishes within ${this.config.timeoutMs} ms; reconnecting`,
      );
    }
    const failures = new Map(failed.map((f) => [f.event.id, itemFailure(f.error, this.config.timeoutMs)]));
    const [first] = failures.values();
    const heldBack = batch.length - acked - failed.length;
    const heldBackNote = heldBack > 0 ? ` (${heldBack} later events of their objects held back)` : '';
    throw new SinkPartialFailureError(
      `${failed.length} of ${batch.length} events refused or not acknowledged by JetStream${heldBackNote}: ` +
        `${first?.error ?? 'failed'}`,
      failures,
    );
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    await connection?.nc.close().catch(() => undefined);
  }

  private async checkStream(jsm: JetStreamManager): Promise<void> {
    const stream = this.config.stream;
    if (!stream) return;
    try {
      await jsm.streams.info(stream.name);
      return;
    } catch (error) {
      if (!isStreamNotFound(error)) throw error;
    }
    const subjects = stream.subjects ?? streamSubjectsFor(this.config.subject);
    if (!stream.create) {
      throw new SinkUnavailableError(
        `JetStream stream ${stream.name} does not exist: create it with subjects ${subjects.join(', ')}, or set stream.create: true`,
      );
    }
    // Concurrent creators of an identical stream all succeed: adding an existing stream with the same config is a no-op.
    await jsm.streams.add({
      name: stream.name,
      subjects,
      duplicate_window: nanos(stream.duplicateWindowSeconds * 1000),
    });
  }

  private headersOf(event: OutboundEvent) {
    const h = natsHeaders();
    h.set('content-type', 'application/cloudevents+json');
    if (this.config.ceHeaders) {
      for (const [name, value] of Object.entries(ceBinaryHeaders(JSON.parse(event.json) as Record<string, unknown>)))
        h.set(name, value);
    }
    return h;
  }
}

function groupByKey(batch: readonly OutboundEvent[]): Map<string, OutboundEvent[]> {
  const byKey = new Map<string, OutboundEvent[]>();
  for (const event of batch) {
    const events = byKey.get(event.orderingKey);
    if (events) events.push(event);
    else byKey.set(event.orderingKey, [event]);
  }
  return byKey;
}

function itemFailure(error: unknown, timeoutMs: number): ItemFailure {
  if (error instanceof natsErrors.TimeoutError)
    return { error: `no acknowledgement within ${timeoutMs} ms`, permanent: false };
  // The stream refused this message for good (too large, wrong stream): 4xx; 503 is a full stream or a leader election.
  if (error instanceof JetStreamApiError)
    return { error: `JetStream ${error.code}: ${error.message}`, permanent: error.status < 500, status: error.status };
  // The client refuses a payload over the server's max_payload before sending it.
  if (error instanceof natsErrors.InvalidArgumentError) return { error: error.message, permanent: true };
  return { error: describeError(error), permanent: false };
}

/** The client turns "no one listens on this subject" into JetStreamNotEnabled; after connect proved JetStream on, it means no stream. */
function isNoResponders(error: unknown): boolean {
  return error instanceof Error && error.name === 'JetStreamNotEnabled';
}

/** Pending requests fail with a RequestError when the connection closes, before isClosed() turns true. */
function isConnectionLost(error: unknown): boolean {
  return (
    error instanceof natsErrors.ClosedConnectionError ||
    (error instanceof natsErrors.RequestError && !error.isNoResponders())
  );
}

function isStreamNotFound(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;
}

function jetStreamMessage(error: unknown): string {
  if (
    isNoResponders(error) ||
    (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.JetStreamNotEnabledForAccount)
  ) {
    return 'JetStream is not enabled (start the server with -js, or enable it for this account)';
  }
  return describeError(error);
}

/** Rejects as soon as `signal` aborts; the engine then leaves the events pending. */
async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) throw new AbortedError('write aborted');
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new AbortedError('write aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/**
 * The client's TLS options. nats.js sends no server name for a server given by IP address, and
 * Node then checks the certificate against the name `localhost`: a certificate issued for the
 * address would be refused. Such servers are checked against their addresses instead.
 */
function natsTlsOptions(config: NatsSinkConfig, servers: readonly string[]): Record<string, unknown> {
  const files = readTlsFiles(config);
  const addresses = servers
    .map((s) => new URL(s.includes('://') ? s : `nats://${s}`).hostname.replace(/^\[(.*)\]$/, '$1'))
    .filter((host) => isIP(host) !== 0);
  if (addresses.length === 0) return files;
  return {
    ...files,
    checkServerIdentity: (name: string, cert: PeerCertificate): Error | undefined => {
      if (name !== 'localhost') return checkServerIdentity(name, cert);
      if (addresses.some((address) => checkServerIdentity(address, cert) === undefined)) return undefined;
      return checkServerIdentity(addresses.length === 1 ? (addresses[0] as string) : name, cert);
    },
  };
}
