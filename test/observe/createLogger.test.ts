import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '../../src/observe/createLogger.js';
import { noopLogger } from '../support/noopLogger.js';
import { registerSecret } from '../../src/secrets/secretRegistry.js';
import { ConfigError } from '../../src/errors.js';

const API_KEY = 'sk_live_Qw3rTy9UiOp4AsDfGhJk';
const SINK_SECRET = 'whsec_c2VjcmV0LXNpZ25pbmcta2V5';

/** A logger writing into memory; `output()` is everything written so far. */
function capture(options: { level?: string; pretty?: boolean } = {}): { logger: Logger; output: () => string } {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  const logger = createLogger({ level: 'debug', ...options, destination: stream });
  return { logger, output: () => chunks.join('') };
}

const lines = (text: string): Record<string, unknown>[] =>
  text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('createLogger', () => {
  registerSecret(API_KEY);
  registerSecret(SINK_SECRET);

  it('writes JSON lines with the normal fields intact', () => {
    const { logger, output } = capture();
    logger.info(
      { log: 'career', entries: 3, sink: { name: 'hooks', url: 'https://hooks.test/in' } },
      'delivered %d events',
      3,
    );
    const [line] = lines(output());
    expect(line).toMatchObject({
      level: 30,
      msg: 'delivered 3 events',
      log: 'career',
      entries: 3,
      sink: { name: 'hooks', url: 'https://hooks.test/in' },
    });
  });

  it('keeps a registered API key out of fields, messages, arguments and child bindings', () => {
    const { logger, output } = capture();
    logger.info(
      { request: { url: `https://api.test/v1?key=${API_KEY}` }, note: `key is ${API_KEY}` },
      `using ${API_KEY}`,
    );
    logger.debug('configured with %s and %o', API_KEY, { nested: [API_KEY] });
    logger.child({ keyHint: API_KEY }).warn({ secretsLoaded: [SINK_SECRET] }, 'child');
    const text = output();
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain(SINK_SECRET);
    const [first, second, third] = lines(text);
    expect(first).toMatchObject({
      msg: 'using [redacted]',
      note: 'key is [redacted]',
      request: { url: 'https://api.test/v1?key=[redacted]' },
    });
    expect(second?.msg).toBe('configured with [redacted] and {"nested":["[redacted]"]}');
    expect(third).toMatchObject({ keyHint: '[redacted]', secretsLoaded: ['[redacted]'], msg: 'child' });
  });

  it('redacts Authorization and other credential headers in any letter case and at any depth', () => {
    const { logger, output } = capture();
    const headers = {
      Authorization: 'Bearer token-one',
      authorization: 'Bearer token-two',
      AUTHORIZATION: 'Bearer token-three',
      'X-Api-Key': 'key-four',
      'webhook-signature': 'v1,sig-five',
      'Set-Cookie': 'session=six',
      accept: 'application/json',
    };
    logger.info({ headers, request: { method: 'POST', headers }, deep: { a: { b: { c: { headers } } } } }, 'request');
    logger.info({
      config: {
        api: { apiKey: 'plain-seven', baseUrl: 'https://api.test' },
        db: { password: 'pw-eight', Token: 'tok-nine' },
      },
    });
    const text = output();
    for (const leaked of [
      'token-one',
      'token-two',
      'token-three',
      'key-four',
      'sig-five',
      'six',
      'plain-seven',
      'pw-eight',
      'tok-nine',
    ]) {
      expect(text).not.toContain(leaked);
    }
    const [request, config] = lines(text);
    expect(request).toMatchObject({
      headers: { Authorization: '[redacted]', AUTHORIZATION: '[redacted]', accept: 'application/json' },
    });
    expect(request).toMatchObject({
      request: { method: 'POST', headers: { 'X-Api-Key': '[redacted]', accept: 'application/json' } },
    });
    expect(config).toMatchObject({ config: { api: { apiKey: '[redacted]', baseUrl: 'https://api.test' } } });
  });

  it('keeps secrets out of bindings from child(), grandchildren and setBindings()', () => {
    const { logger, output } = capture();
    const child = logger.child({
      headers: { AUTHORIZATION: 'Bearer child-token' },
      apiKey: 'child-key',
      hint: API_KEY,
    });
    child.info('from child');
    const grandchild = child.child({ request: { 'x-api-key': 'grand-key' }, note: `uses ${SINK_SECRET}` });
    grandchild.info('from grandchild');
    // child() with options takes a different path through pino than child() without
    const withOptions = logger.child({ Token: 'option-token' }, { level: 'warn' });
    withOptions.warn('from child with options');
    const rebound = logger.child({ component: 'poller' });
    rebound.setBindings({ password: 'set-password', cursor: `after ${API_KEY}` });
    rebound.info('after setBindings');
    const text = output();
    for (const leaked of [
      API_KEY,
      SINK_SECRET,
      'child-token',
      'child-key',
      'grand-key',
      'option-token',
      'set-password',
    ]) {
      expect(text).not.toContain(leaked);
    }
    const [first, second, third, fourth] = lines(text);
    expect(first).toMatchObject({
      msg: 'from child',
      headers: { AUTHORIZATION: '[redacted]' },
      apiKey: '[redacted]',
      hint: '[redacted]',
    });
    expect(second).toMatchObject({
      msg: 'from grandchild',
      apiKey: '[redacted]',
      request: { 'x-api-key': '[redacted]' },
      note: 'uses [redacted]',
    });
    expect(third).toMatchObject({ msg: 'from child with options', Token: '[redacted]' });
    expect(fourth).toMatchObject({
      msg: 'after setBindings',
      component: 'poller',
      password: '[redacted]',
      cursor: 'after [redacted]',
    });
  });

  it('scrubs a secret from the message prefix of a child logger', () => {
    const { logger, output } = capture();
    logger.child({}, { msgPrefix: `[${API_KEY}] ` }).info('prefixed');
    expect(output()).not.toContain(API_KEY);
    expect(lines(output())[0]?.msg).toBe('[[redacted]] prefixed');
  });

  it('scrubs a secret registered after the child logger that holds it was created', () => {
    const late = 'late_secret_Zx8Cv7Bn6Mm5';
    const { logger, output } = capture({ pretty: true });
    const child = logger.child({ sink: { name: 'hooks', signingKey: late } });
    registerSecret(late);
    child.info(`signing with ${late}`);
    const text = output();
    expect(text).toContain('signing with [redacted]');
    expect(text).not.toContain(late);
  });

  it('does not modify the objects it is given', () => {
    const { logger } = capture();
    const headers = { Authorization: 'Bearer keep-me', accept: 'json' };
    const note = `about ${API_KEY}`;
    const fields = { headers, note };
    logger.info(fields, 'request');
    expect(fields).toEqual({ headers: { Authorization: 'Bearer keep-me', accept: 'json' }, note });
  });

  it('scrubs the API key from error messages and stacks, whichever way the error is logged', () => {
    const { logger, output } = capture();
    const error = Object.assign(new Error(`GET https://api.test/v1/careers?api_key=${API_KEY} failed: 401`), {
      code: 'API_UNAUTHORIZED',
      headers: { 'X-API-KEY': 'hdr-secret' },
    });
    logger.error(error);
    logger.error({ err: error });
    logger.error({ err: error, attempt: 2 }, 'poll failed');
    logger.warn({ error, cause: new Error(`wrapped ${API_KEY}`) }, 'nested errors');
    const text = output();
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain('hdr-secret');
    const [first, second, third, fourth] = lines(text);
    for (const line of [first, second]) {
      expect(line?.msg).toBe('GET https://api.test/v1/careers?api_key=[redacted] failed: 401');
      expect(line?.err).toMatchObject({
        type: 'Error',
        code: 'API_UNAUTHORIZED',
        headers: { 'X-API-KEY': '[redacted]' },
      });
      expect((line?.err as { stack: string }).stack).toContain('api_key=[redacted] failed');
    }
    expect(third).toMatchObject({
      msg: 'poll failed',
      attempt: 2,
      err: { message: expect.stringContaining('[redacted]') },
    });
    expect(fourth).toMatchObject({
      error: { type: 'Error', message: expect.stringContaining('[redacted]') },
      cause: { message: 'wrapped [redacted]' },
    });
  });

  it('scrubs secrets from pretty output as well', () => {
    const { logger, output } = capture({ pretty: true });
    logger.info({ headers: { authorization: 'Bearer pretty-token' }, ok: 'visible-field' }, `pretty ${API_KEY}`);
    logger.error(new Error(`boom ${API_KEY}`));
    const text = output();
    expect(text).toContain('visible-field');
    expect(text).toContain('pretty [redacted]');
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain('pretty-token');
    expect(text).not.toContain('\u001b['); // a PassThrough is not a TTY: no colours
  });

  it('takes the level from the option, then CHANGEFEED_LOG_LEVEL, then info', () => {
    expect(createLogger({ level: 'warn', destination: new PassThrough() }).level).toBe('warn');
    const previous = process.env.CHANGEFEED_LOG_LEVEL;
    try {
      process.env.CHANGEFEED_LOG_LEVEL = 'debug';
      expect(createLogger({ destination: new PassThrough() }).level).toBe('debug');
      delete process.env.CHANGEFEED_LOG_LEVEL;
      expect(createLogger({ destination: new PassThrough() }).level).toBe('info');
      process.env.CHANGEFEED_LOG_LEVEL = 'verbose';
      expect(() => createLogger({ destination: new PassThrough() })).toThrow(ConfigError);
      expect(() => createLogger({ destination: new PassThrough() })).toThrow(
        'CHANGEFEED_LOG_LEVEL=verbose is not a log level',
      );
    } finally {
      if (previous === undefined) delete process.env.CHANGEFEED_LOG_LEVEL;
      else process.env.CHANGEFEED_LOG_LEVEL = previous;
    }
  });

  it('filters below the level', () => {
    const { logger, output } = capture({ level: 'warn' });
    logger.info('hidden');
    logger.warn('shown');
    expect(lines(output()).map((l) => l.msg)).toEqual(['shown']);
  });

  it('offers a noop logger that writes nothing', () => {
    expect(noopLogger.isLevelEnabled('fatal')).toBe(false);
    expect(() => noopLogger.child({ a: 1 }).error('nothing')).not.toThrow();
  });
});
