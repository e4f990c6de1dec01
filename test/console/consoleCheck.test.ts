import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpdir } from 'node:os';
import { checkConsole } from '../../src/cli/consoleCheck.js';
import { consoleConfigSchema } from '../../src/console/consoleConfig.js';

// In a directory that exists, so the message may show the path (a bare name may be a pasted secret).
const missingTokenFile = join(tmpdir(), `changefeed-no-console-token-${process.pid}`);
const token = { token: 'operator-token-0123456789', role: 'operator' };
const http = (port: number | null) => ({ port, host: '127.0.0.1' }) as Parameters<typeof checkConsole>[0]['http'];

describe('changefeed check: the console', () => {
  it.each([
    { name: 'off', console: { enabled: false }, port: null, result: undefined },
    {
      name: 'on without the health listener',
      console: { enabled: true, tokens: [token] },
      port: null,
      result: { ok: false, fix: expect.stringContaining('http.port') as string },
    },
    {
      name: 'on without a token',
      console: { enabled: true },
      port: 9464,
      result: { ok: false, fix: expect.stringContaining('console.tokens') as string },
    },
    {
      name: 'on with a token file that is missing',
      console: { enabled: true, tokenFiles: [{ file: missingTokenFile, role: 'read-only' }] },
      port: 9464,
      result: { ok: false, detail: expect.stringContaining(missingTokenFile) as string },
    },
    {
      name: 'on, served',
      console: { enabled: true, tokens: [token] },
      port: 9464,
      result: { ok: true, detail: '/console on 127.0.0.1:9464' },
    },
  ])('$name', ({ console, port, result }) => {
    const checked = checkConsole({ console: consoleConfigSchema.parse(console), http: http(port) });
    if (result === undefined) expect(checked).toBeUndefined();
    else expect(checked).toMatchObject({ name: 'console', ...result });
  });
});
