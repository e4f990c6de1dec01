import { errors as undiciErrors, type Dispatcher } from 'undici';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { errorCodeOf, isAbortError } from '../errors.js';
import { ApiError, ApiProblemError, ApiTransportError, type ApiErrorCode } from './apiErrors.js';
import { keyFingerprint } from './apiKeyFingerprint.js';
import { ERROR_BODY_BYTES, readCappedBody, readJsonBody, type BodyReader } from './responseBody.js';
import { formatFieldErrors, parseProblemDetails, type ProblemDetails } from './problemDetails.js';
import { readResponseMeta, requestIdHeader, type ResponseMeta } from './responseHeaders.js';
import { isTlsFailure, opensslReason } from '../tlsFiles.js';
import { guardBeforeWrite } from './guardedDispatch.js';
import { exchangeSignal } from './exchangeSignal.js';
import { acquireServicePool, type ServicePoolLease } from './servicePools.js';

/**
 * Who gets a request first when the budget is tight: the identity-provider log, then polls of
 * career and skill logs, then discovery lists, then backfill (reading history older than any
 * regular poll would), which takes only what the others leave.
 */
export type RequestPriority = 'identity_provider' | 'poll' | 'discovery' | 'backfill';

/**
 * Decides when a request may leave. The read budget implements it; the client calls `acquire`
 * before every GET and `observe` after every response, so the budget sees the server's headers.
 */
export interface RequestGate {
  acquire(priority: RequestPriority, signal?: AbortSignal): Promise<void>;
  /** Every response; `path` is the request path without query string. */
  observe(meta: ResponseMeta, path: string): void;
}

export interface ServiceClientOptions {
  baseUrl: string;
  /** Returns the current key; called per request so a rotated key file takes effect at once. */
  apiKey: () => string;
  /** Where the key came from, for error messages ("CHANGEFEED_API_KEY", "api.apiKeyFile /run/key"). */
  credentialSource: string;
  /** Sent as User-Agent on every request (serviceUserAgent: product, version and instance id). */
  userAgent: string;
  timeoutMs: number;
  /** PEM of the CAs to trust for https (api.caFile); the public CAs when absent. */
  ca?: string;
  /** Largest body read; beyond it reading stops (API_RESPONSE_TOO_LARGE). */
  maxResponseBytes: number;
  /** Largest entry emitted; larger ones are quarantined (read by readActivityPage). */
  maxEntryBytes?: number;
  clock: Clock;
  gate: RequestGate;
  /**
   * Called right before every request leaves, after the gate's wait; what it throws is thrown
   * instead and nothing is sent. A replica passes its tenant's lease check here (LEASE_LOST once
   * the lease is past its local deadline), so a replica resumed after a pause polls nothing.
   */
  requestGuard?: () => void;
  logger: Logger;
}

/**
 * The only place that talks HTTP to the service: bearer auth, timeouts, problem-details errors,
 * over the process's one pool for its origin (servicePools.ts). It never retries; the pollers decide.
 */
export class ServiceClient {
  private readonly pool: ServicePoolLease;
  /** The pool, behind the request guard when there is one (asked again as each request is written). */
  private readonly dispatcher: Dispatcher;
  private readonly basePath: string;

  constructor(private readonly options: ServiceClientOptions) {
    const url = new URL(options.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = acquireServicePool(url.origin, {
      timeoutMs: options.timeoutMs,
      ...(options.ca ? { ca: options.ca } : {}),
    });
    const pool = this.pool.pool;
    this.dispatcher = options.requestGuard ? pool.compose(guardBeforeWrite(options.requestGuard)) : pool;
  }

  get maxResponseBytes(): number {
    return this.options.maxResponseBytes;
  }

  get maxEntryBytes(): number {
    return this.options.maxEntryBytes ?? 1024 * 1024;
  }

  /**
   * GET `path` (starting with /api/v1) and parse its JSON body; throws an ApiError otherwise.
   * `readBody` replaces the default reading of a 2xx body (capped at maxResponseBytes, then
   * JSON.parse): the activity reader streams the page instead, so a hostile one never sits whole
   * in memory.
   */
  async getJson(
    path: string,
    query: Record<string, string | number | undefined>,
    priority: RequestPriority,
    signal?: AbortSignal,
    readBody: BodyReader = readJsonBody,
  ): Promise<{ body: unknown; meta: ResponseMeta }> {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) search.set(k, String(v));
    const qs = search.toString();
    const fullPath = `${this.basePath}${path}${qs ? `?${qs}` : ''}`;
    // Outside the transport try: a missing key file is a credential problem, not a network one.
    const key = this.options.apiKey();
    const authorization = `Bearer ${key}`;
    await this.options.gate.acquire(priority, signal);
    this.options.requestGuard?.();
    const started = this.options.clock.now();
    const combined = exchangeSignal(signal, this.options.timeoutMs);
    try {
      let res;
      try {
        res = await this.dispatcher.request({
          method: 'GET',
          path: fullPath,
          headers: { authorization, accept: 'application/json', 'user-agent': this.options.userAgent },
          signal: combined.signal,
        });
      } catch (error) {
        if (signal?.aborted) throw error;
        // The guard refused as the request was about to be written: nothing was sent.
        if (errorCodeOf(error) === 'LEASE_LOST') throw error;
        throw this.transportError(error, path);
      }
      // When the headers arrived, not after the body: the service stamped Date before sending them.
      const headersAt = this.options.clock.now();
      const status = res.statusCode;
      const ok = status >= 200 && status < 300;
      let body: unknown;
      let text = '';
      let bodyError: unknown;
      try {
        const context = {
          path,
          requestId: requestIdHeader(res.headers),
          maxBytes: this.options.maxResponseBytes,
        };
        if (ok) body = await readBody(res.body, res.headers, context);
        else text = await readCappedBody(res.body, res.headers, ERROR_BODY_BYTES, { path, truncate: true });
      } catch (error) {
        bodyError = error;
      }
      // The headers arrived, so the budget and the clock learn from them whatever the body was.
      const meta = readResponseMeta(status, res.headers, headersAt, started);
      this.options.gate.observe(meta, path);
      this.options.logger.debug(
        { path, status, requestId: meta.requestId, ms: this.options.clock.now() - started, remaining: meta.remaining },
        'service request',
      );
      if (bodyError instanceof ApiError) throw bodyError;
      if (bodyError !== undefined) {
        if (signal?.aborted) throw bodyError as Error;
        throw this.transportError(bodyError, path);
      }
      if (ok) return { body, meta };
      throw this.problemError(status, text, meta, path, key);
    } finally {
      combined.clear();
    }
  }

  /** Done with the service: the shared pool closes with its last client. */
  async close(): Promise<void> {
    await this.pool.release();
  }

  private problemError(status: number, text: string, meta: ResponseMeta, path: string, key: string): ApiProblemError {
    // A service that echoes the request (detail: "bad token Bearer sk_...") must not put the key
    // into messages, which reach the store (last_error), status and logs.
    const problem = parseProblemDetails(status, redactKey(text, key));
    const [code, message] = describeProblem(status, problem, path, this.options.credentialSource, meta);
    return new ApiProblemError({
      code,
      message: `${message} (request ${meta.requestId ?? problem.requestId ?? 'without id'})`,
      path,
      status,
      problem,
      requestId: meta.requestId,
      retryAfterSeconds: meta.retryAfterSeconds,
      // Which key was rejected, not which one the file holds by now: a rotation while the request
      // was out is then told from a rejection of the new key (PollFailures).
      ...(status === 401 && { rejectedKey: keyFingerprint(key) }),
    });
  }

  private transportError(error: unknown, path: string): ApiTransportError {
    const timedOut =
      error instanceof undiciErrors.HeadersTimeoutError ||
      error instanceof undiciErrors.BodyTimeoutError ||
      (error instanceof Error && error.name === 'TimeoutError') ||
      isAbortError(error);
    if (timedOut) {
      return new ApiTransportError(
        'API_TIMEOUT',
        `GET ${path} timed out after ${this.options.timeoutMs} ms`,
        path,
        error,
      );
    }
    if (isTlsFailure(error)) {
      const { code, message } = error as Error & { code: string };
      return new ApiTransportError(
        'API_CONNECTION',
        `GET ${path}: TLS failed: ${opensslReason(message)} (${code}); check api.caFile (the CA that signed ` +
          "the service's certificate) and the host name in api.baseUrl",
        path,
        error,
      );
    }
    const reason = error instanceof Error ? ((error as { code?: string }).code ?? error.message) : String(error);
    return new ApiTransportError('API_CONNECTION', `GET ${path} failed to connect: ${reason}`, path, error);
  }
}

function redactKey(text: string, key: string): string {
  if (key.length < 4) return text;
  const forms = new Set([
    key,
    encodeURIComponent(key),
    JSON.stringify(key).slice(1, -1),
    Buffer.from(key).toString('base64'),
  ]);
  let redacted = text;
  for (const form of forms) redacted = redacted.split(form).join('<redacted>');
  return redacted;
}

function describeProblem(
  status: number,
  problem: ProblemDetails,
  path: string,
  credentialSource: string,
  meta: ResponseMeta,
): [ApiErrorCode, string] {
  const detail = problem.detail ? `: ${problem.detail}` : '';
  if (status === 401)
    return ['API_INVALID_CREDENTIAL', `credential rejected by the service (401); check ${credentialSource}`];
  if (status === 403 && problem.error === 'trial_expired') {
    return [
      'API_TRIAL_EXPIRED',
      `the workspace trial has expired; an administrator can upgrade at ${problem.upgradeUrl ?? '(no upgrade_url given)'}`,
    ];
  }
  if (status === 403 && problem.slug === 'insufficient-permissions') {
    return ['API_INSUFFICIENT_PERMISSIONS', `the key's acting person may not read ${path}${detail}`];
  }
  if (status === 403) return ['API_INSUFFICIENT_SCOPE', `the API key lacks the scope to read ${path}${detail}`];
  if (status === 404) return ['API_NOT_FOUND', `${path} was not found (deleted, or of another company)`];
  if (status === 400) {
    const fields = formatFieldErrors(problem);
    return ['API_VALIDATION', `the service rejected GET ${path} as invalid${fields ? `: ${fields}` : detail}`];
  }
  if (status === 429) {
    return ['API_RATE_LIMITED', `read budget exhausted (429); retry after ${meta.retryAfterSeconds ?? '?'} s`];
  }
  if (status >= 500) return ['API_SERVER_ERROR', `the service failed with ${status}${detail}`];
  return ['API_HTTP_ERROR', `unexpected status ${status} for GET ${path}${detail}`];
}
