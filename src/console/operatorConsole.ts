import { hkdfSync, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseCookie, serialize as serializeCookie } from 'cookie';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { ConfigError, describeError } from '../errors.js';
import { TokenSlots } from '../feed/feedTokens.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';
import { shortFingerprint } from '../tenants/tenant.js';
import { ConsoleAssets } from './consoleAssets.js';
import type { ConsoleConfig } from './consoleConfig.js';
import { parseReplayForm, parseTailType, replayFormOf, type ReplayForm } from './consoleForms.js';
import { layout, messageBody, signInBody, TENANT_VIEWS, type TenantView, type Viewer } from './consoleLayout.js';
import { deadLettersBody, logsBody, sinksBody, tailBody, tenantsBody, type TenantSummary } from './consolePages.js';
import {
  allow,
  checkOrigin,
  decodeSegment,
  overHttps,
  PAGE_HEADERS,
  readForm,
  Refusal,
  requireOperator,
} from './consoleRequests.js';
import { streamTail } from './consoleTail.js';
import { replayBody } from './replayPage.js';
import {
  eventsLastHour,
  readBudget,
  readDeadLetters,
  readLogRows,
  readPollHours,
  readSinkRows,
} from './consoleReads.js';
import { SESSION_COOKIE, ConsoleSessions, type ConsoleSession } from './consoleSessions.js';
import { SignInThrottle } from './signInThrottle.js';
import { TenantActions } from './tenantActions.js';
import type { ConsoleSource, ConsoleTenant } from './consoleSource.js';
import { ConsoleTokens, type ConsoleUser } from './consoleTokens.js';
import { DeliveryRates } from './deliveryRates.js';
import { lastDaySlots } from './hourCharts.js';
import type { SafeHtml } from './htmlTemplate.js';

/** The console's part of the daemon's config, for `check`. */
export interface ConsoleListener {
  console: ConsoleConfig;
  http: { port: number | null };
}

/** A signed-in request to one of a tenant's views. */
interface TenantPage {
  req: IncomingMessage;
  res: ServerResponse;
  tenant: string;
  store: ChangefeedStore;
  auth: { session: ConsoleSession; user: ConsoleUser };
  viewer: Viewer;
}

/**
 * The operator console at `/console` on the health server: server-rendered pages of the tenants,
 * their logs, sinks, dead letters, replay and a live tail, with htmx (served from the package) for
 * refreshes and in-place forms. Everything is read from the store through the store contract, so
 * every replica shows the same; retry and replay are the same store writes as `dead-letters
 * retry` and `replay --queue-only`, which the tenant's holder picks up.
 *
 * Access: a token typed into the sign-in form gives a signed session cookie (HttpOnly,
 * SameSite=Strict, Secure over HTTPS) naming the token's key, never the token. Every page needs a
 * session; every change needs the operator role, the session's CSRF token in the form and, when
 * the browser sends them, an Origin of this host and `Sec-Fetch-Site: same-origin`.
 */
export class OperatorConsole {
  private readonly tokens: ConsoleTokens;
  private readonly sessions: ConsoleSessions;
  private readonly assets = new ConsoleAssets();
  private readonly rates = new DeliveryRates();
  private readonly tails: TokenSlots;
  private readonly open = new Set<AbortController>();
  private readonly throttle = new SignInThrottle();
  private readonly actions = new TenantActions();

  constructor(
    private readonly config: ConsoleConfig,
    private readonly source: ConsoleSource,
    private readonly deps: { clock: Clock; logger: Logger; writeTimeoutMs: number },
  ) {
    this.tokens = new ConsoleTokens(config);
    // Until the store gives the replicas' shared key (useSessionKey), sessions are this process's.
    this.sessions = new ConsoleSessions(randomBytes(32), config.sessionMinutes * 60_000);
    this.tails = new TokenSlots(config.maxTailsPerSession);
  }

  /** The console as configured; ConfigError says what to set. Reads the token files. */
  static check(config: ConsoleListener): void {
    if (!config.console.enabled) return;
    if (config.http.port === null)
      throw new ConfigError('console.enabled needs the health server: set http.port (or CHANGEFEED_HTTP_PORT)', [
        { path: 'http.port', message: 'set a port; the console is served at /console on it' },
      ]);
    if (new ConsoleTokens(config.console).size === 0)
      throw new ConfigError(
        'console.enabled needs at least one sign-in token in console.tokens or console.tokenFiles',
        [
          {
            path: 'console.tokens',
            message: 'add a token (at least 16 characters) with its role, e.g. from ${CONSOLE_TOKEN}',
          },
        ],
      );
  }

  /**
   * Sessions are signed from now on with a key derived from `secret`, which every replica of a
   * shared store holds (the cluster key): a session one replica issued is good on every other.
   */
  useSharedSecret(secret: Buffer): void {
    this.sessions.useKey(Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'changefeed console sessions', 32)));
  }

  static owns(path: string): boolean {
    return path === '/console' || path.startsWith('/console/');
  }

  /** Answers one request under /console; never throws, never leaves a promise behind. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    this.route(req, res).catch((error: unknown) => {
      if (error instanceof Refusal) {
        this.sendMessage(res, error.status, error.message, error.field);
        return;
      }
      this.deps.logger.error({ err: describeError(error), path: req.url }, 'the console could not answer');
      if (!res.headersSent) this.sendMessage(res, 503, 'the store could not be read; try again shortly');
      else res.destroy();
    });
  }

  /** Ends every live tail (the server is closing). */
  close(): void {
    for (const abort of this.open) abort.abort();
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://console');
    const path = url.pathname;
    if (req.method === 'GET' && this.assets.serve(path, res)) return;
    if (path === '/console/sign-in') return this.signIn(req, res);
    const auth = this.authenticate(req);
    if (path === '/console/sign-out' && req.method === 'POST') {
      if (auth) await this.checkedForm(req, auth.session);
      res.writeHead(303, { location: '/console/sign-in', 'set-cookie': this.cookie(req, '', 0) }).end();
      return;
    }
    if (!auth) {
      if (req.method === 'GET' && !path.endsWith('/tail/events')) {
        res.writeHead(303, { location: '/console/sign-in', 'cache-control': 'no-store' }).end();
        return;
      }
      throw new Refusal(401, 'sign in first: your session ended or was never started');
    }
    const viewer: Viewer = { role: auth.user.role, csrf: this.sessions.csrfToken(auth.session) };
    if (path === '/console' || path === '/console/') {
      allow(req, ['GET']);
      return this.sendPage(res, 200, tenantsBody(await this.summaries()), { title: 'Tenants', viewer });
    }
    const match = /^\/console\/tenants\/([^/]+)(\/[a-z-]+(?:\/[a-z]+)?)?$/.exec(path);
    if (!match) throw new Refusal(404, `no console page at ${path}`);
    const tenant = this.tenantNamed(decodeSegment(match[1] as string));
    const store = await this.source.store(tenant.name);
    if (!store) throw new Refusal(503, 'the store is not open yet; try again shortly');
    const rest = match[2] ?? '';
    const now = this.deps.clock.now();
    const page: TenantPage = { req, res, tenant: tenant.name, store, auth, viewer };
    switch (rest) {
      case '': {
        allow(req, ['GET']);
        const [summary, logs, budget, hours] = await Promise.all([
          this.summary(tenant),
          readLogRows(store, Date.now()),
          readBudget(store),
          readPollHours(store),
        ]);
        return this.sendTenantPage(page, 'logs', logsBody(summary, logs, budget, lastDaySlots(hours, now)));
      }
      case '/sinks': {
        allow(req, ['GET']);
        const sinks = (await readSinkRows(store, Date.now())).map((s) => ({
          ...s,
          perMinute: this.rates.record(tenant.name, s.name, s.delivered, now),
        }));
        return this.sendTenantPage(page, 'sinks', sinksBody(tenant.name, sinks));
      }
      case '/dead-letters':
        allow(req, ['GET']);
        return this.sendDeadLetters(page, undefined);
      case '/dead-letters/retry':
        return this.retry(page);
      case '/replay':
        return this.replay(page);
      case '/tail': {
        allow(req, ['GET']);
        const parsed = parseTailType(url.searchParams.get('type'));
        const body =
          'error' in parsed
            ? tailBody(tenant.name, undefined, parsed.error)
            : tailBody(tenant.name, parsed.type, undefined);
        return this.sendTenantPage(page, 'tail', body, 'error' in parsed ? 400 : 200);
      }
      case '/tail/events': {
        allow(req, ['GET']);
        const parsed = parseTailType(url.searchParams.get('type'));
        if ('error' in parsed) throw new Refusal(400, parsed.error.message, parsed.error.field);
        return this.tail(req, res, store, parsed.type, auth.session);
      }
      default:
        throw new Refusal(404, `no console page at ${path}`);
    }
  }

  private async signIn(req: IncomingMessage, res: ServerResponse): Promise<void> {
    allow(req, ['GET', 'POST']);
    if (req.method === 'GET') {
      this.sendPage(res, 200, signInBody(undefined), { title: 'Sign in' });
      return;
    }
    checkOrigin(req);
    const address = req.socket.remoteAddress ?? 'unknown';
    // Refused before the form is read, the right token too: the answer says nothing of the token.
    if (this.signInPaused(res, address)) return;
    const form = await readForm(req);
    // Asked again once the form is in: forms held back on many connections, then sent together,
    // each passed the first check before any of them was counted.
    if (this.signInPaused(res, address)) return;
    const user = this.tokens.signIn(form.get('token') ?? '');
    if (!user) {
      this.throttle.failed(address, this.deps.clock.now());
      this.deps.logger.warn({ remote: address }, 'console sign-in refused: unknown token');
      this.sendPage(res, 401, signInBody('token: not a console token'), { title: 'Sign in' });
      return;
    }
    this.throttle.succeeded(address);
    const { cookie } = this.sessions.issue(user.key, this.deps.clock.now());
    this.deps.logger.info({ role: user.role, token: user.key }, 'console sign-in');
    res
      .writeHead(303, {
        location: '/console',
        'set-cookie': this.cookie(req, cookie, this.config.sessionMinutes * 60),
        'cache-control': 'no-store',
      })
      .end();
  }

  /** Answers 429 and returns true while `address` may not sign in (SignInThrottle). */
  private signInPaused(res: ServerResponse, address: string): boolean {
    const waitMs = this.throttle.waitMs(address, this.deps.clock.now());
    if (waitMs <= 0) return false;
    const minutes = Math.ceil(waitMs / 60_000);
    res.setHeader('retry-after', String(Math.ceil(waitMs / 1000)));
    const message = `token: too many wrong tokens; sign-in is paused for ${minutes} minute${minutes === 1 ? '' : 's'}`;
    this.sendPage(res, 429, signInBody(message), { title: 'Sign in' });
    return true;
  }

  private authenticate(req: IncomingMessage): { session: ConsoleSession; user: ConsoleUser } | undefined {
    const value = parseCookie(req.headers.cookie ?? '')[SESSION_COOKIE];
    const session = this.sessions.verify(value, this.deps.clock.now());
    const user = session ? this.tokens.byKey(session.tokenKey) : undefined;
    return session && user ? { session, user } : undefined;
  }

  /** The form of a change: same origin, this session's CSRF token. */
  private async checkedForm(req: IncomingMessage, session: ConsoleSession): Promise<URLSearchParams> {
    checkOrigin(req);
    const form = await readForm(req);
    if (!this.sessions.checkCsrf(session, form.get('csrf') ?? undefined))
      throw new Refusal(
        403,
        'the form is stale or from another page (CSRF check failed); reload the page and try again',
        'csrf',
      );
    return form;
  }

  private async retry(page: TenantPage): Promise<void> {
    const { req, tenant, store, auth } = page;
    allow(req, ['POST']);
    const form = await this.checkedForm(req, auth.session);
    requireOperator(auth.user, 'retry dead letters');
    const now = Date.now();
    const sinks = (await store.sinks.list()).map((s) => s.name);
    let requeued = 0;
    if (form.get('all') === '1')
      requeued = await this.actions.run(tenant, 'a retry of all dead letters', async () => {
        let sum = 0;
        for (const sink of sinks) sum += await store.deadLetters.requeueSink(sink, now);
        return sum;
      });
    else {
      const eventId = form.get('eventId') ?? '';
      const sink = form.get('sink') ?? '';
      if (eventId === '') throw new Refusal(400, 'name the event to retry', 'eventId');
      if (!sinks.includes(sink)) throw new Refusal(400, `no sink named "${sink}" in tenant ${tenant}`, 'sink');
      requeued = await store.deadLetters.requeueEvent(eventId, sink, now);
    }
    this.deps.logger.info({ tenant, requeued, token: auth.user.key }, 'dead letters re-queued from the console');
    const notice = `Re-queued ${requeued} dead letter${requeued === 1 ? '' : 's'}; the tenant's holder delivers them within seconds.`;
    await this.sendDeadLetters(page, notice);
  }

  private async sendDeadLetters(page: TenantPage, notice: string | undefined): Promise<void> {
    const body = deadLettersBody(page.tenant, await readDeadLetters(page.store), page.viewer, notice);
    this.sendTenantPage(page, 'dead-letters', body);
  }

  private async replay(page: TenantPage): Promise<void> {
    const { req, tenant, store, auth, viewer } = page;
    allow(req, ['GET', 'POST']);
    const sinks = (await store.sinks.list()).filter((s) => s.active).map((s) => s.name);
    const send = (status: number, body: SafeHtml) => this.sendTenantPage(page, 'replay', body, status);
    const replayView = (form: ReplayForm, extra: Partial<Parameters<typeof replayBody>[0]> = {}) =>
      replayBody({ tenant, sinks, form, errors: [], preview: undefined, notice: undefined, viewer, ...extra });
    if (req.method === 'GET') {
      const since = new Date(Date.now() - 3_600_000).toISOString().slice(0, 19) + 'Z';
      send(200, replayView({ sink: sinks[0] ?? '', since, until: '', log: '', type: '' }));
      return;
    }
    const params = await this.checkedForm(req, auth.session);
    const typed = replayFormOf(params);
    // A count without an end is pinned to now, and the queue form carries that end: what is
    // queued is what was counted, not that and whatever was ingested in between.
    const form = typed.until === '' ? { ...typed, until: new Date(Date.now()).toISOString() } : typed;
    const parsed = parseReplayForm(form, sinks);
    if ('errors' in parsed) {
      send(400, replayView(typed, { errors: parsed.errors }));
      return;
    }
    const { request } = parsed;
    if (params.get('action') === 'queue') {
      requireOperator(auth.user, 'queue a replay');
      const queued = await this.actions.run(tenant, 'a replay', () =>
        store.outbox.enqueueFromJournal(request.sink, request.range, Date.now()),
      );
      this.deps.logger.info(
        { tenant, sink: request.sink, queued, token: auth.user.key },
        'replay queued from the console',
      );
      const notice = `Queued ${queued} event${queued === 1 ? '' : 's'} for ${request.sink}; the tenant's holder delivers them.`;
      send(200, replayView(form, { notice }));
      return;
    }
    const count = await this.actions.run(tenant, 'a replay count', () => store.outbox.countFromJournal(request.range));
    send(200, replayView(form, { preview: { request, count } }));
  }

  /** A live tail, one of the session's console.maxTailsPerSession. */
  private async tail(
    req: IncomingMessage,
    res: ServerResponse,
    store: ChangefeedStore,
    type: string | undefined,
    session: ConsoleSession,
  ): Promise<void> {
    // Every sign-in is a new session: without a bound in all, tails could hold every connection
    // of the health listener and starve the probes.
    if (this.open.size >= this.config.maxTails)
      throw new Refusal(
        429,
        `the console holds ${this.config.maxTails} live tails (console.maxTails); try again later`,
      );
    if (!this.tails.acquire(session.id))
      throw new Refusal(
        429,
        `this session holds ${this.config.maxTailsPerSession} live tails (console.maxTailsPerSession); close one`,
      );
    const abort = new AbortController();
    this.open.add(abort);
    res.once('close', () => abort.abort());
    try {
      await streamTail(req, res, store, type, this.deps, abort.signal);
    } finally {
      this.tails.release(session.id);
      this.open.delete(abort);
    }
  }

  private tenantNamed(name: string): ConsoleTenant {
    const tenant = this.source.tenants().find((t) => t.name === name);
    if (!tenant) throw new Refusal(404, `unknown tenant "${name}": it is not in this replica's config`, 'tenant');
    return tenant;
  }

  private async summaries(): Promise<TenantSummary[]> {
    const tenants = this.source.tenants();
    this.rates.keepOnly(new Set(tenants.map((t) => t.name)));
    return Promise.all(tenants.map((t) => this.summary(t)));
  }

  /** Holder, state, key, the latest error of its logs or sinks, and the events of the last hour. */
  private async summary(tenant: ConsoleTenant): Promise<TenantSummary> {
    const [placement, store] = await Promise.all([this.source.placement(tenant.name), this.source.store(tenant.name)]);
    const base = { name: tenant.name, placement, keyFingerprint: shortFingerprint(tenant.keyFingerprint) };
    if (!store) return { ...base, lastError: null, eventsLastHour: null };
    const [logs, sinks, hours] = await Promise.all([
      store.watchedLogs.list(),
      store.sinks.list(),
      readPollHours(store),
    ]);
    const failing = logs.find((l) => l.consecutiveFailures > 0 && l.lastError);
    const sinkError = sinks.find(
      (s) => s.active && (s.disabledReason ?? (s.consecutiveFailures > 0 ? s.lastError : null)),
    );
    const lastError = failing
      ? `${failing.log} ${failing.objectId}: ${failing.lastError}`
      : sinkError
        ? `sink ${sinkError.name}: ${sinkError.disabledReason ?? sinkError.lastError}`
        : null;
    return { ...base, lastError, eventsLastHour: eventsLastHour(hours, this.deps.clock.now()) };
  }

  private sendPage(
    res: ServerResponse,
    status: number,
    body: SafeHtml,
    page: { title: string; viewer?: Viewer; tenant?: string; view?: TenantView },
  ): void {
    const text = layout({ ...page, assets: this.assets.page, body });
    res.writeHead(status, { ...PAGE_HEADERS, 'content-length': String(Buffer.byteLength(text)) }).end(text);
  }

  /** A page of one of the tenant's views, titled after the view. */
  private sendTenantPage(page: TenantPage, view: TenantView, body: SafeHtml, status = 200): void {
    const title = `${page.tenant}: ${TENANT_VIEWS.find((v) => v.view === view)?.label.toLowerCase() ?? view}`;
    this.sendPage(page.res, status, body, { title, viewer: page.viewer, tenant: page.tenant, view });
  }

  private sendMessage(res: ServerResponse, status: number, message: string, field?: string): void {
    if (res.headersSent) res.destroy();
    else this.sendPage(res, status, messageBody(message, field), { title: status === 404 ? 'Not found' : 'Not done' });
  }

  private cookie(req: IncomingMessage, value: string, maxAgeSeconds: number): string {
    return serializeCookie(SESSION_COOKIE, value, {
      path: '/console',
      httpOnly: true,
      sameSite: 'strict',
      secure: overHttps(req),
      maxAge: maxAgeSeconds,
    });
  }
}
