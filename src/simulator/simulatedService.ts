import type { Clock } from '../clock.js';
import type { ActivitySimulation } from './activitySimulation.js';
import { routeRead, type Outcome } from './apiRoutes.js';
import { ApiKeyRegistry, deriveApiKey, keySuffix, type Credential } from './apiKeys.js';
import {
  internalErrorProblem,
  invalidCredentialProblem,
  methodNotAllowedProblem,
  rateLimitProblem,
  trialExpiredProblem,
} from './problemResponses.js';
import { instanceIdFrom } from './daemonUserAgent.js';
import { Random } from './random.js';
import { ReadBuckets, type BucketState } from './readBucket.js';
import { ALL_SCOPES, type SimulatorOptions } from './simulatorOptions.js';

/** One request as the simulator saw it, for tests to assert on (never the full key). */
export interface RequestRecord {
  /** Clock time (epoch ms) at which the request arrived. */
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly status: number;
  /** Last four characters of the presented key, or null when none was presented. */
  readonly apiKeySuffix: string | null;
  /** Index of the company the key belongs to (0 is the first); null when the key was not accepted. */
  readonly company: number | null;
  /**
   * From `User-Agent: skills-changefeed/<version> (<instanceId>)`, null for any other: which
   * replica polled which company when.
   */
  readonly instanceId: string | null;
}

export interface ServiceRequest {
  readonly method: string;
  /** Path and query, as in the request line. */
  readonly url: string;
  readonly authorization: string | undefined;
  readonly userAgent: string | undefined;
}

export interface ServiceResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** How long the transport should hold the response back (simulated latency). */
  readonly delayMs: number;
}

/**
 * The service's HTTP semantics without the transport: authentication, the reads bucket, the
 * trial switch and injected faults around the routes. The order mirrors a real gateway: a request
 * that fails authentication is not counted; every authenticated GET is, whatever it then returns.
 * The key names the company: its data answers, its own bucket counts.
 */
export class SimulatedService {
  readonly keys = new ApiKeyRegistry();
  readonly buckets: ReadBuckets;
  readonly requests: RequestRecord[] = [];
  /** The key of each company, by index; the first is exposed as Simulator.apiKey. */
  readonly companyKeys: readonly string[];
  private readonly faultRandom: Random;
  private readonly requestIds: Random;
  private requestCount = 0;

  constructor(
    private readonly options: SimulatorOptions,
    private readonly companies: readonly ActivitySimulation[],
    private readonly clock: Clock,
  ) {
    this.companyKeys = companies.map((_, company) => deriveApiKey(options.seed, company));
    this.companyKeys.forEach((key, company) => this.keys.add(key, ALL_SCOPES, company));
    this.buckets = new ReadBuckets(options.readsPerHour);
    this.faultRandom = Random.derive(options.seed, 'faults');
    this.requestIds = Random.derive(options.seed, 'request-ids');
  }

  handle(request: ServiceRequest): ServiceResponse {
    const now = this.clock.now();
    // Prefixing (rather than resolving against a base) keeps a path like //x from becoming a host.
    const url = new URL(`http://simulator.invalid${request.url.startsWith('/') ? '' : '/'}${request.url}`);
    const requestId = `req_${(++this.requestCount).toString(36).padStart(6, '0')}${this.requestIds.string(10)}`;
    const credential = this.keys.authenticate(request.authorization);
    let bucket: BucketState;
    let outcome: Outcome;
    if (!credential) {
      bucket = this.buckets.peek(null, now);
      outcome = { kind: 'problem', problem: invalidCredentialProblem() };
    } else if (request.method !== 'GET') {
      // Only GETs draw on the reads bucket; writes are not simulated.
      bucket = this.buckets.peek(credential.key, now);
      outcome = { kind: 'problem', problem: methodNotAllowedProblem(request.method), headers: { Allow: 'GET' } };
    } else {
      const decision = this.buckets.take(credential.key, now);
      bucket = decision;
      outcome = decision.allowed
        ? this.read(credential, url, now)
        : {
            kind: 'problem',
            problem: rateLimitProblem(decision.resetSeconds),
            headers: { 'Retry-After': String(decision.resetSeconds) },
          };
    }
    const response = this.render(outcome, bucket, requestId, url.pathname, now);
    if (!this.options.recordRequests) return response;
    this.requests.push({
      at: now,
      method: request.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      status: response.status,
      apiKeySuffix: keySuffix(request.authorization),
      company: credential?.company ?? null,
      instanceId: instanceIdFrom(request.userAgent),
    });
    return response;
  }

  /** A counted read: the trial switch and transient faults come before the endpoint itself. */
  private read(credential: Credential, url: URL, now: number): Outcome {
    if (this.options.faults.trialExpired) return { kind: 'problem', problem: trialExpiredProblem() };
    const failure = this.injectedError();
    if (failure) return failure;
    const simulation = this.companies[credential.company];
    if (!simulation) throw new Error(`no company ${credential.company}`);
    simulation.catchUp(now);
    const outcome = routeRead({
      simulation,
      sortOrder: this.options.sortOrder,
      credential,
      path: url.pathname,
      params: url.searchParams,
      now,
    });
    return this.malform(outcome);
  }

  /** A transient failure: mostly a 500 problem, sometimes a gateway's non-JSON 502 or 503. */
  private injectedError(): Outcome | null {
    if (!this.faultRandom.chance(this.options.faults.errorRate)) return null;
    const roll = this.faultRandom.next();
    if (roll < 0.75) return { kind: 'problem', problem: internalErrorProblem() };
    if (roll < 0.875) {
      return {
        kind: 'raw',
        status: 502,
        contentType: 'text/html',
        body: '<html><body><h1>502 Bad Gateway</h1></body></html>\n',
      };
    }
    return {
      kind: 'raw',
      status: 503,
      contentType: 'text/plain',
      body: 'upstream connect error or disconnect/reset before headers\n',
    };
  }

  /** A 200 whose body a strict client must refuse: not JSON at all, or data that is not an array. */
  private malform(outcome: Outcome): Outcome {
    if (outcome.kind !== 'json' || !outcome.list || !this.faultRandom.chance(this.options.faults.malformedRate))
      return outcome;
    const variants = ['{"data":[{"id":"act_', '{"data":null}', '{"data":{"items":[]}}', '<html>maintenance</html>'];
    return { kind: 'raw', status: 200, contentType: 'application/json', body: this.faultRandom.pick(variants) };
  }

  private render(outcome: Outcome, bucket: BucketState, requestId: string, path: string, now: number): ServiceResponse {
    const headers: Record<string, string> = {
      Date: new Date(now - (now % (this.options.faults.dateResolutionSeconds * 1000))).toUTCString(),
      'X-Request-Id': requestId,
      'RateLimit-Limit': String(bucket.limit),
      'RateLimit-Remaining': String(bucket.remaining),
      'RateLimit-Reset': String(bucket.resetSeconds),
    };
    let status: number;
    let body: string;
    if (outcome.kind === 'problem') {
      status = outcome.problem.status;
      headers['Content-Type'] = 'application/problem+json';
      Object.assign(headers, outcome.headers);
      body = JSON.stringify({ ...outcome.problem, instance: path, requestId });
    } else if (outcome.kind === 'json') {
      status = outcome.status;
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(outcome.body);
    } else {
      status = outcome.status;
      headers['Content-Type'] = outcome.contentType;
      body = outcome.body;
    }
    const slow = this.options.faults.slowRate > 0 && this.faultRandom.chance(this.options.faults.slowRate);
    return { status, headers, body, delayMs: this.options.faults.latencyMs + (slow ? this.options.faults.slowMs : 0) };
  }
}
