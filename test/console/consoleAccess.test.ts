import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../support/manualClock.js';
import { consoleConfigSchema } from '../../src/console/consoleConfig.js';
import { CONSOLE_CSP } from '../../src/console/consoleRequests.js';
import { FAILURES_PER_ADDRESS, SIGN_IN_WINDOW_MS } from '../../src/console/signInThrottle.js';
import type { ConsoleSource } from '../../src/console/consoleSource.js';
import { OperatorConsole } from '../../src/console/operatorConsole.js';
import { noopLogger } from '../support/noopLogger.js';
import { registerSecret } from '../../src/secrets/secretRegistry.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { storeWithEvents } from '../support/webhookHarness.js';

const OPERATOR = 'operator-token-0123456789';
const READER = 'read-only-token-0123456789';
const SHARED = Buffer.alloc(32, 7);

/** A console over a real SQLite store with one dead letter, on a loopback server. */
async function serve(consoleOf: (source: ConsoleSource) => OperatorConsole, store: SqliteChangefeedStore) {
  const source: ConsoleSource = {
    tenants: () => [{ name: 'default', keyFingerprint: 'ab'.repeat(32), sinks: [{ name: 'hook', type: 'webhook' }] }],
    placement: () => Promise.resolve({ kind: 'here' }),
    store: () => Promise.resolve(store),
  };
  const operatorConsole = consoleOf(source);
  const server: Server = createServer((req, res) => operatorConsole.handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, operatorConsole, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function consoleWith(tokens: { token: string; role: 'operator' | 'read-only' }[], clock: ManualClock) {
  return (source: ConsoleSource) => {
    const c = new OperatorConsole(consoleConfigSchema.parse({ enabled: true, tokens, sessionMinutes: 60 }), source, {
      clock,
      logger: noopLogger,
      writeTimeoutMs: 30_000,
    });
    c.useSharedSecret(SHARED);
    return c;
  };
}

const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
  redirect: 'manual' as const,
});

async function signIn(base: string, token: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/console/sign-in`, {
    ...form({ token }),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
  const setCookie = res.headers.get('set-cookie') ?? '';
  return { res, setCookie, cookie: setCookie.split(';')[0] ?? '' };
}

/**
 * A sign-in POST on a connection of its own that sends `Expect: 100-continue`: `continued` once
 * the console has taken the request in (Node answers 100 Continue as it hands it over), `send`
 * then sends the form, `status` is the answer's.
 */
function guessAfterContinue(base: string, token: string) {
  const body = new URLSearchParams({ token }).toString();
  const req = request(`${base}/console/sign-in`, {
    method: 'POST',
    agent: false,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'content-length': String(Buffer.byteLength(body)),
      expect: '100-continue',
    },
  });
  const continued = new Promise<void>((resolve) => req.once('continue', resolve));
  const status = new Promise<number>((resolve, reject) => {
    req.once('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', reject);
  });
  req.flushHeaders();
  return { continued, status, send: () => req.end(body) };
}

/** The CSRF token the console's own pages put in their forms. */
async function csrfOf(base: string, cookie: string): Promise<string> {
  const page = await (await fetch(`${base}/console/tenants/default/dead-letters`, { headers: { cookie } })).text();
  return /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
}

describe('the operator console: access', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 20, 12));
  let store: SqliteChangefeedStore;
  let app: Awaited<ReturnType<typeof serve>>;

  beforeAll(async () => {
    ({ store } = await storeWithEvents(3, 3));
    const [first] = await store.outbox.pending('hook', 0, 1);
    await store.outbox.markDead('hook', [{ seq: first!.seq, error: 'refused', status: 422, response: '<b>no</b>' }], 1);
    app = await serve(
      consoleWith(
        [
          { token: OPERATOR, role: 'operator' },
          { token: READER, role: 'read-only' },
        ],
        clock,
      ),
      store,
    );
  });

  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('sends a browser without a session to the sign-in form, and a stream request gets 401', async () => {
    const page = await fetch(`${app.base}/console/tenants/default`, { redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/console/sign-in');
    expect((await fetch(`${app.base}/console/tenants/default/tail/events`)).status).toBe(401);
  });

  it('signs in with a cookie that is HttpOnly, SameSite=Strict, never the token, and Secure over HTTPS', async () => {
    const wrong = await signIn(app.base, 'not-a-console-token-at-all');
    expect(wrong.res.status).toBe(401);
    expect(wrong.setCookie).toBe('');
    const plain = await signIn(app.base, OPERATOR);
    expect(plain.res.status).toBe(303);
    expect(plain.setCookie).toMatch(/HttpOnly/);
    expect(plain.setCookie).toMatch(/SameSite=Strict/);
    expect(plain.setCookie).toMatch(/Path=\/console/);
    expect(plain.setCookie).not.toMatch(/Secure/);
    expect(plain.setCookie).not.toContain(OPERATOR);
    const proxied = await signIn(app.base, OPERATOR, { 'x-forwarded-proto': 'https' });
    expect(proxied.setCookie).toMatch(/Secure/);
  });

  it('serves every page with the strict Content-Security-Policy', async () => {
    const { cookie } = await signIn(app.base, READER);
    for (const path of [
      '',
      '/tenants/default',
      '/tenants/default/sinks',
      '/tenants/default/dead-letters',
      '/sign-in',
    ]) {
      const res = await fetch(`${app.base}/console${path}`, { headers: { cookie } });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-security-policy'), path).toBe(CONSOLE_CSP);
    }
  });

  it.each<{ name: string; csrf: boolean; headers: Record<string, string>; status: number; says: string }>([
    { name: 'without the CSRF token', csrf: false, headers: {}, status: 403, says: 'CSRF check failed' },
    {
      name: 'from another site (Sec-Fetch-Site)',
      csrf: true,
      headers: { 'sec-fetch-site': 'cross-site' },
      status: 403,
      says: 'Sec-Fetch-Site',
    },
    {
      name: 'from another origin',
      csrf: true,
      headers: { origin: 'http://evil.example' },
      status: 403,
      says: 'Origin is another site',
    },
  ])('refuses a retry $name', async ({ csrf, headers, status, says }) => {
    const { cookie } = await signIn(app.base, OPERATOR);
    const token = csrf ? await csrfOf(app.base, cookie) : '';
    const res = await fetch(`${app.base}/console/tenants/default/dead-letters/retry`, {
      ...form({ csrf: token, all: '1' }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...headers },
    });
    expect(res.status).toBe(status);
    expect(await res.text()).toContain(says);
    expect(await store.deadLetters.list()).toHaveLength(1);
  });

  it('refuses a read-only token a retry, and lets an operator retry', async () => {
    const retry = async (token: string) => {
      const { cookie } = await signIn(app.base, token);
      return fetch(`${app.base}/console/tenants/default/dead-letters/retry`, {
        ...form({ csrf: await csrfOf(app.base, cookie), all: '1' }),
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      });
    };
    const reader = await retry(READER);
    expect(reader.status).toBe(403);
    expect(await reader.text()).toContain('your token is read-only');
    expect(await store.deadLetters.list()).toHaveLength(1);
    const operator = await retry(OPERATOR);
    expect(operator.status).toBe(200);
    expect(await operator.text()).toContain('Re-queued 1 dead letter');
    expect(await store.deadLetters.list()).toHaveLength(0);
  });

  it('names the field of bad input: an unknown tenant, a bad time, a bad glob', async () => {
    const { cookie } = await signIn(app.base, OPERATOR);
    const unknown = await fetch(`${app.base}/console/tenants/%3Cscript%3Ex/sinks`, { headers: { cookie } });
    expect(unknown.status).toBe(404);
    const text = await unknown.text();
    expect(text).toContain('<strong>tenant</strong>: unknown tenant &quot;&lt;script&gt;x&quot;');
    expect(text).not.toContain('<script>x');
    const replay = await fetch(`${app.base}/console/tenants/default/replay`, {
      ...form({ csrf: await csrfOf(app.base, cookie), action: 'count', sink: 'hook', since: 'yesterday', type: 'a b' }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    });
    expect(replay.status).toBe(400);
    const body = await replay.text();
    expect(body).toContain('since: &quot;yesterday&quot; is not an ISO 8601 time with a zone');
    expect(body).toContain('type: must be a glob');
    const tail = await fetch(`${app.base}/console/tenants/default/tail?type=%3Cx%3E`, { headers: { cookie } });
    expect(tail.status).toBe(400);
    expect(await tail.text()).toContain('type: must be a glob');
  });

  it('accepts a session on another replica sharing the key, until it expires or its token is removed, never past its lifetime', async () => {
    const { cookie } = await signIn(app.base, READER);
    const same = await serve(
      consoleWith(
        [
          { token: OPERATOR, role: 'operator' },
          { token: READER, role: 'read-only' },
        ],
        clock,
      ),
      store,
    );
    const without = await serve(consoleWith([{ token: OPERATOR, role: 'operator' }], clock), store);
    try {
      const at = async (base: string) =>
        (await fetch(`${base}/console`, { headers: { cookie }, redirect: 'manual' })).status;
      expect(await at(same.base)).toBe(200);
      expect(await at(without.base)).toBe(303);
      const forged = cookie.replace(/\.[^.]+$/, '.AAAA');
      expect((await fetch(`${same.base}/console`, { headers: { cookie: forged }, redirect: 'manual' })).status).toBe(
        303,
      );
      await clock.advance(61 * 60_000);
      expect(await at(same.base)).toBe(303);
      // A replica whose clock runs a day ahead issues sessions that end a day late elsewhere.
      const ahead = await serve(
        consoleWith([{ token: READER, role: 'read-only' }], new ManualClock(clock.now() + 86_400_000)),
        store,
      );
      try {
        const fromAhead = (await signIn(ahead.base, READER)).cookie;
        expect(
          (await fetch(`${ahead.base}/console`, { headers: { cookie: fromAhead }, redirect: 'manual' })).status,
        ).toBe(200);
        expect(
          (await fetch(`${same.base}/console`, { headers: { cookie: fromAhead }, redirect: 'manual' })).status,
        ).toBe(303);
      } finally {
        await ahead.close();
      }
    } finally {
      await same.close();
      await without.close();
    }
  });
});

describe('the operator console: guessing tokens', () => {
  it('pauses sign-in from an address after too many wrong tokens, the right one too, until the window ends', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 20, 12));
    const { store } = await storeWithEvents(1, 1);
    const app = await serve(consoleWith([{ token: OPERATOR, role: 'operator' }], clock), store);
    try {
      for (let i = 0; i < FAILURES_PER_ADDRESS; i++)
        expect((await signIn(app.base, `wrong-token-guess-${i}-000000`)).res.status).toBe(401);
      const paused = await signIn(app.base, OPERATOR);
      expect(paused.res.status).toBe(429);
      expect(paused.setCookie).toBe('');
      expect(paused.res.headers.get('retry-after')).toBe(String(SIGN_IN_WINDOW_MS / 1000));
      expect(paused.res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(await paused.res.text()).toContain('too many wrong tokens');
      await clock.advance(SIGN_IN_WINDOW_MS);
      expect((await signIn(app.base, OPERATOR)).res.status).toBe(303);
    } finally {
      await app.close();
      await store.close();
    }
  });

  it('counts wrong tokens sent at once on many connections against the same pause', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 20, 12));
    const { store } = await storeWithEvents(1, 1);
    const app = await serve(consoleWith([{ token: OPERATOR, role: 'operator' }], clock), store);
    try {
      // Each guess is let through to its form (its "100 Continue") before any form is sent: all of
      // them pass the check made as the request arrives, before the first wrong token is counted.
      const guesses = Array.from({ length: 3 * FAILURES_PER_ADDRESS }, (_, i) =>
        guessAfterContinue(app.base, `wrong-token-guess-${i}-000000`),
      );
      await Promise.all(guesses.map((guess) => guess.continued));
      for (const guess of guesses) guess.send();
      const statuses = await Promise.all(guesses.map((guess) => guess.status));
      expect(statuses.filter((status) => status === 401)).toHaveLength(FAILURES_PER_ADDRESS);
      expect(statuses.filter((status) => status === 429)).toHaveLength(2 * FAILURES_PER_ADDRESS);
      expect((await signIn(app.base, OPERATOR)).res.status).toBe(429);
    } finally {
      await app.close();
      await store.close();
    }
  });
});

describe('the operator console: live tails', () => {
  it('holds console.maxTails tails in all, however many sessions ask', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 20, 12));
    const { store } = await storeWithEvents(1, 1);
    const config = consoleConfigSchema.parse({
      enabled: true,
      tokens: [{ token: READER, role: 'read-only' }],
      maxTails: 1,
    });
    const app = await serve((source) => {
      const c = new OperatorConsole(config, source, { clock, logger: noopLogger, writeTimeoutMs: 30_000 });
      c.useSharedSecret(SHARED);
      return c;
    }, store);
    const abort = new AbortController();
    try {
      const tail = async () => {
        const { cookie } = await signIn(app.base, READER);
        return fetch(`${app.base}/console/tenants/default/tail/events`, { headers: { cookie }, signal: abort.signal });
      };
      const first = await tail();
      expect(first.status).toBe(200);
      await first.body?.getReader().read();
      const second = await tail();
      expect(second.status).toBe(429);
      expect(await second.text()).toContain('console.maxTails');
    } finally {
      abort.abort();
      app.operatorConsole.close();
      await app.close();
      await store.close();
    }
  });
});

describe('the operator console: secrets in recorded errors', () => {
  it('cuts a secret out of a page even when it holds characters that are escaped', async () => {
    const secret = 'broker-pa&ss<"word>-0123';
    registerSecret(secret);
    const clock = new ManualClock(Date.UTC(2026, 10, 20, 12));
    const { store } = await storeWithEvents(1, 1);
    const [first] = await store.outbox.pending('hook', 0, 1);
    await store.outbox.markDead(
      'hook',
      [{ seq: first!.seq, error: `auth failed with ${secret}`, response: secret }],
      1,
    );
    const app = await serve(consoleWith([{ token: READER, role: 'read-only' }], clock), store);
    try {
      const { cookie } = await signIn(app.base, READER);
      const page = await (
        await fetch(`${app.base}/console/tenants/default/dead-letters`, { headers: { cookie } })
      ).text();
      expect(page).toContain('auth failed with [redacted]');
      expect(page).not.toContain('pa&amp;ss');
    } finally {
      await app.close();
      await store.close();
    }
  });
});
