import { anySignal } from 'any-signal';
import { Pool, errors as undiciErrors } from 'undici';
import { isTlsFailure, opensslReason, readTlsFiles } from '../tlsFiles.js';
import { AbortedError } from '../errors.js';
import { dateHeader, MAX_RETRY_AFTER_MS, parseRetryAfter } from '../retryAfter.js';
import { readSecretFile } from '../secrets/readSecretFile.js';
import { registerSecret } from '../secrets/secretRegistry.js';
import { ceBinaryHeaders } from './cloudEventsHttp.js';
import { throwIfAborted } from './deadline.js';
import { checkReachable } from './endpointReachability.js';
import type { OutboundEvent, Sink } from '../sinkContract/sink.js';
import {
  SinkDisabledError,
  SinkEndpointFailingError,
  SinkPartialFailureError,
  type ItemFailure,
} from '../sinkContract/sinkErrors.js';
import { isWebhookSecret, signWebhook } from './standardWebhookSignature.js';
import type { WebhookSinkConfig } from './webhookSinkConfig.js';

const RESPONSE_SNIPPET = 512;
/** The most of an answer's body quoted in an endpoint-level failure's message (status, logs). */
const MESSAGE_SNIPPET = 200;
/** The most of a response body read (for the dead-letter snippet); the rest is discarded unread. */
export const RESPONSE_READ_CAP = 2048;

/**
 * Answers that say the endpoint or its configuration is wrong, whatever the event: the signature or
 * credentials refused, the path or method wrong, a proxy wanting credentials, a request timeout,
 * too many requests. With 3xx (a redirect not followed: the url is out of date) and 5xx.
 */
const ENDPOINT_STATUSES = new Set([401, 403, 404, 405, 407, 408, 429]);

/** What the sink reports for a status: delivered, the endpoint failing as a whole, the endpoint gone, or this event refused. */
export type StatusClass = 'delivered' | 'endpoint' | 'gone' | 'event';

/**
 * Endpoint-level answers keep every event pending while the endpoint backs off; event-level ones
 * (400, 409, 413, 415, 422 and the other 4xx) make that one event a dead letter.
 */
export function classifyStatus(status: number): StatusClass {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 410) return 'gone';
  if (status >= 400 && status < 500 && !ENDPOINT_STATUSES.has(status)) return 'event';
  return 'endpoint';
}

/** What to check, for the answers whose cause sits on the receiver's side of the configuration. */
const STATUS_HINTS: Partial<Record<number, string>> = {
  401: 'the receiver refused the request: check that it verifies with the signing secret this sink uses',
  403: 'the receiver refused the request: check the signing secret and any headers it requires',
  404: 'nothing at this url: check url',
  405: 'the url does not take POST: check url',
  407: 'a proxy wants credentials',
};

/** How much later than timeoutMs the pool's own timers fire. */
const POOL_TIMEOUT_MARGIN_MS = 1_000;

/**
 * Posts each event to an HTTP endpoint, signed per Standard Webhooks (`webhook-id` is the event id,
 * identical on every retry and replay). One event per request; the engine decides concurrency,
 * ordering and retries from how classifyStatus sorts the answer. Redirects are not followed.
 */
export class WebhookSink implements Sink {
  readonly type = 'webhook';
  readonly name: string;
  readonly limits = { maxBatchSize: 1, maxInFlight: 256, defaultInFlight: 8 };
  private pool: Pool | undefined;
  private readonly url: URL;
  private readonly secrets: () => string[];

  constructor(private readonly config: WebhookSinkConfig) {
    this.name = config.name;
    this.url = new URL(config.url);
    this.secrets = secretSource(config);
    // Checked at start; connect reads the files again, so a renewed certificate is picked up.
    readTlsFiles(config);
  }

  /**
   * Proves the endpoint accepts connections (no request), so a receiver that refuses them shows as
   * not connected rather than as events failing one by one. A refusal is the endpoint failing as a
   * whole, as during a write: it counts toward the endpoint's failure run and give-up rule.
   */
  async connect(signal: AbortSignal): Promise<void> {
    if (this.pool) return;
    const tls = readTlsFiles(this.config);
    try {
      await checkReachable(this.url, this.config.timeoutMs, signal, tls);
    } catch (error) {
      if (error instanceof AbortedError) throw error;
      throw new SinkEndpointFailingError(
        `cannot connect to ${this.url.origin}: ${transportMessage(error, this.config.timeoutMs)}`,
        { cause: (error as { code?: unknown }).code === 'CONNECT_TIMEOUT' ? 'timeout' : 'connection' },
      );
    }
    this.pool = new Pool(this.url.origin, {
      connections: this.config.delivery.maxInFlight ?? this.limits.defaultInFlight,
      // Only a safety net, later than each exchange's own deadline (timeoutMs), which decides and says so:
      // equal to it, the pool's timer raced that deadline and under load won with another message.
      headersTimeout: this.config.timeoutMs + POOL_TIMEOUT_MARGIN_MS,
      bodyTimeout: this.config.timeoutMs + POOL_TIMEOUT_MARGIN_MS,
      keepAliveTimeout: 30_000,
      connect: Object.keys(tls).length > 0 ? tls : undefined,
    });
  }

  /** Writes the batch's one event: maxBatchSize is 1. */
  async write(batch: readonly OutboundEvent[], signal: AbortSignal): Promise<void> {
    for (const event of batch) {
      const failure = await this.post(event, signal);
      if (failure) {
        const message = `POST ${this.url.origin}${this.url.pathname}: ${failure.error}`;
        throw new SinkPartialFailureError(message, new Map([[event.id, failure]]));
      }
    }
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.close().catch(() => undefined);
  }

  /** Throws SinkEndpointFailingError when the endpoint as a whole fails, not this event. */
  private async post(event: OutboundEvent, signal: AbortSignal): Promise<ItemFailure | undefined> {
    const pool = this.pool;
    if (!pool) return { error: 'not connected', permanent: false };
    const { body, headers } = this.render(event);
    let status: number;
    let responseHeaders: Record<string, string | string[] | undefined>;
    let text: string;
    // One deadline for the whole exchange: the pool's headers and body timeouts restart with every
    // byte, so a receiver that drips its answer held the sink for ever.
    const deadline = AbortSignal.timeout(this.config.timeoutMs);
    // Not AbortSignal.any: on Node 20 it leaves an entry on the worker's long-lived signal for
    // every write, for good (nodejs/node#55351).
    const exchange = anySignal([signal, deadline]);
    try {
      const res = await pool.request({
        method: 'POST',
        path: `${this.url.pathname}${this.url.search}`,
        headers,
        body,
        signal: exchange,
      });
      status = res.statusCode;
      responseHeaders = res.headers;
      // A 2xx is decided by its status: its body is not read at all. Another answer's body is read
      // up to a small cap, within the same deadline, for the dead-letter snippet.
      text = status >= 200 && status < 300 ? discard(res.body) : await readSnippet(res.body, exchange);
    } catch (error) {
      const target = `POST ${this.url.origin}${this.url.pathname}`;
      throwIfAborted(signal, target);
      if (deadline.aborted)
        throw new SinkEndpointFailingError(
          `${target}: no complete answer within timeoutMs (${this.config.timeoutMs} ms)`,
          { cause: 'timeout' },
        );
      const message = transportMessage(error, this.config.timeoutMs);
      throw new SinkEndpointFailingError(`${target}: ${message}`, {
        cause: isTimeout(error) ? 'timeout' : 'connection',
      });
    } finally {
      exchange.clear();
    }
    const kind = classifyStatus(status);
    if (kind === 'delivered') return undefined;
    const response = text.slice(0, RESPONSE_SNIPPET);
    if (kind === 'gone')
      throw new SinkDisabledError(`${this.url.origin}${this.url.pathname} answered 410 Gone: the endpoint was removed`);
    if (kind === 'endpoint') {
      const retryAfterMs = status === 429 || status === 503 ? retryAfter(responseHeaders, Date.now()) : undefined;
      const location = responseHeaders.location;
      const redirect =
        status >= 300 && status < 400
          ? ` (redirect to ${location === undefined ? '?' : quoted(String(location))} not followed)`
          : '';
      const hint = STATUS_HINTS[status];
      throw new SinkEndpointFailingError(
        `POST ${this.url.origin}${this.url.pathname}: HTTP ${status}${redirect}${answered(response)}${hint ? `; ${hint}` : ''}`,
        { cause: 'status', status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
      );
    }
    return { error: `HTTP ${status}`, permanent: !this.config.retryClientErrors, status, response };
  }

  private render(event: OutboundEvent): { body: string; headers: Record<string, string> } {
    // The wall clock, not an injected one: receivers check `webhook-timestamp` against real time.
    const timestamp = Math.floor(Date.now() / 1000);
    let body: string;
    let typed: Record<string, string>;
    if (this.config.mode === 'binary') {
      const ce = JSON.parse(event.json) as Record<string, unknown>;
      body = JSON.stringify(ce.data);
      typed = { ...ceBinaryHeaders(ce), 'content-type': 'application/json' };
    } else {
      body = event.json;
      typed = { 'content-type': 'application/cloudevents+json' };
    }
    const secrets = this.secrets();
    return {
      body,
      headers: {
        ...this.config.headers,
        ...typed,
        'user-agent': 'skills-changefeed',
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        ...(secrets.length > 0 ? { 'webhook-signature': signWebhook(secrets, event.id, timestamp, body) } : {}),
      },
    };
  }
}

/**
 * The start of an answer's body (200 bytes), quoted (`quoted`), so a receiver cannot forge log
 * lines or status columns; nothing for an empty body.
 */
function answered(body: string): string {
  const trimmed = body.trim();
  return trimmed === '' ? '' : ` answering ${quoted(trimmed)}`;
}

/** The start of text the receiver sent (200 bytes), quoted with quotes and control characters escaped. */
function quoted(text: string): string {
  const cut = Buffer.from(text, 'utf8')
    .subarray(0, MESSAGE_SNIPPET)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  const escaped = JSON.stringify(cut).replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `${escaped}${cut.length < text.length ? ' (cut)' : ''}`;
}

function secretSource(config: WebhookSinkConfig): () => string[] {
  const fixed = config.secrets ?? (config.secret ? [config.secret] : []);
  for (const s of fixed) registerSecret(s);
  if (!config.secretFile) return () => fixed;
  const file = config.secretFile;
  let cached: { text: string; secrets: string[] } | undefined;
  return () => {
    const text = readSecretFile(file);
    if (cached?.text !== text) {
      const secrets = text.split(/\s+/).filter((s) => s !== '');
      for (const s of secrets) registerSecret(s);
      if (!secrets.every(isWebhookSecret))
        throw new SinkDisabledError(`the secret file ${file} does not hold whsec_ secrets`);
      cached = { text, secrets };
    }
    return cached.secrets;
  };
}

type ResponseBody = AsyncIterable<Buffer> & { destroy(): void; on(event: 'error', listener: () => void): unknown };

/**
 * Drops the rest of a body unread. undici may still report the request aborted on it later (when
 * the write's signal ends); nobody is listening then, and an unheard 'error' would crash the process.
 */
function discard(body: ResponseBody): string {
  body.on('error', () => undefined);
  body.destroy();
  return '';
}

/** Up to RESPONSE_READ_CAP bytes of the body, or what arrived before `signal` aborted; the rest is dropped. */
async function readSnippet(body: ResponseBody, signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_READ_CAP || signal.aborted) break;
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  } finally {
    discard(body);
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_READ_CAP).toString('utf8');
}

/** Retry-After as ms (parseRetryAfter), at most an hour; nonsense ("-5") is ignored. */
function retryAfter(headers: Record<string, string | string[] | undefined>, now: number): number | undefined {
  const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
  const seconds = parseRetryAfter(first(headers['retry-after']), now, dateHeader(first(headers.date)));
  return seconds === undefined ? undefined : Math.min(seconds * 1000, MAX_RETRY_AFTER_MS);
}

function isTimeout(error: unknown): boolean {
  return (
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError ||
    (error instanceof Error && error.name === 'TimeoutError')
  );
}

function transportMessage(error: unknown, timeoutMs: number): string {
  if (isTimeout(error)) return `no answer within ${timeoutMs} ms`;
  const code = (error as { code?: string }).code;
  if (isTlsFailure(error)) {
    return (
      `TLS failed: ${opensslReason((error as Error).message)} (${code}); check caFile (the CA that signed the ` +
      "endpoint's certificate), the host name in url, and certFile/keyFile if it wants a client certificate"
    );
  }
  return `connection failed: ${code ?? (error instanceof Error ? error.message : String(error))}`;
}
