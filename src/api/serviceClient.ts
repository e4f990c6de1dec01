import { Pool, errors as undiciErrors } from 'undici';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { isAbortError } from '../errors.js';
import { ApiMalformedResponseError, ApiProblemError, ApiTransportError, type ApiErrorCode } from './apiErrors.js';
import { formatFieldErrors, parseProblemDetails, type ProblemDetails } from './problemDetails.js';
import { readResponseMeta, type ResponseMeta } from './responseHeaders.js';

/**
 * Who gets a request first when the budget is tight: the identity-provider log, then polls of
 * career and skill logs, then discovery lists, then backfill (reading history older than any
 * regular poll would), which takes only what the others leave.
 */
export type RequestPriority = 'identityProvider' | 'poll' | 'discovery' | 'backfill';

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
  timeoutMs: number;
  clock: Clock;
  gate: RequestGate;
  logger: Logger;
  connections?: number;
}

export interface JsonResponse {
  body: unknown;
  meta: ResponseMeta;
  path: string;
}

/**
 * The only place that talks HTTP to the service: one pooled undici dispatcher per base URL,
 * bearer auth, timeouts, problem-details errors. It never retries; the pollers decide.
 */
export class ServiceClient {
  private readonly pool: Pool;
  private readonly basePath: string;

  constructor(private readonly options: ServiceClientOptions) {
    const url = new URL(options.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: options.connections ?? 4,
      keepAliveTimeout: 30_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  get credentialSource(): string {
    return this.options.credentialSource;
  }

  /** GET `path` (starting with /api/v1) and parse its JSON body; throws an ApiError otherwise. */
  async getJson(
    path: string,
    query: Record<string, string | number | undefined>,
    priority: RequestPriority,
    signal?: AbortSignal,
  ): Promise<JsonResponse> {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) search.set(k, String(v));
    const qs = search.toString();
    const fullPath = `${this.basePath}${path}${qs ? `?${qs}` : ''}`;
    // Outside the transport try: a missing key file is a credential problem, not a network one.
    const authorization = `Bearer ${this.options.apiKey()}`;
    await this.options.gate.acquire(priority, signal);
    const started = this.options.clock.now();
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let status: number;
    let headers: Record<string, string | string[] | undefined>;
    let text: string;
    try {
      const res = await this.pool.request({
        method: 'GET',
        path: fullPath,
        headers: { authorization, accept: 'application/json' },
        signal: combined,
      });
      status = res.statusCode;
      headers = res.headers;
      text = await res.body.text();
    } catch (error) {
      if (signal?.aborted) throw error;
      throw this.transportError(error, path);
    }
    const meta = readResponseMeta(status, headers, this.options.clock.now());
    this.options.gate.observe(meta, path);
    this.options.logger.debug(
      { path, status, requestId: meta.requestId, ms: meta.receivedAt - started, remaining: meta.remaining },
      'service request',
    );
    if (status >= 200 && status < 300) {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new ApiMalformedResponseError(
          `response to GET ${path} is not JSON (request ${meta.requestId ?? 'without id'})`,
          path,
          meta.requestId,
        );
      }
      return { body, meta, path };
    }
    throw this.problemError(status, text, meta, path);
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private problemError(status: number, text: string, meta: ResponseMeta, path: string): ApiProblemError {
    const problem = parseProblemDetails(status, text);
    const [code, message] = describeProblem(status, problem, path, this.options.credentialSource, meta);
    return new ApiProblemError({
      code,
      message: `${message} (request ${meta.requestId ?? problem.requestId ?? 'without id'})`,
      path,
      status,
      problem,
      requestId: meta.requestId,
      retryAfterSeconds: meta.retryAfterSeconds,
    });
  }

  private transportError(error: unknown, path: string): ApiTransportError {
    const timedOut =
      error instanceof undiciErrors.HeadersTimeoutError ||
      error instanceof undiciErrors.BodyTimeoutError ||
      (error instanceof Error && error.name === 'TimeoutError') ||
      isAbortError(error);
    if (timedOut) {
      return new ApiTransportError('API_TIMEOUT', `GET ${path} timed out after ${this.options.timeoutMs} ms`, path, error);
    }
    const reason = error instanceof Error ? ((error as { code?: string }).code ?? error.message) : String(error);
    return new ApiTransportError('API_CONNECTION', `GET ${path} failed to connect: ${reason}`, path, error);
  }
}

function describeProblem(
  status: number,
  problem: ProblemDetails,
  path: string,
  credentialSource: string,
  meta: ResponseMeta,
): [ApiErrorCode, string] {
  const detail = problem.detail ? `: ${problem.detail}` : '';
  if (status === 401) return ['API_INVALID_CREDENTIAL', `credential rejected by the service (401); check ${credentialSource}`];
  if (status === 403 && problem.error === 'trial_expired') {
    return ['API_TRIAL_EXPIRED', `the workspace trial has expired; an administrator can upgrade at ${problem.upgradeUrl ?? '(no upgrade_url given)'}`];
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
