import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { isWebhookSecret } from '../../src/sinks/standardWebhookSignature.js';
import { freePort, until } from '../support/daemonProcess.js';
import { startCliInProcess, type InProcessCommand } from '../support/runCli.js';

let receive: InProcessCommand | undefined;
afterEach(async () => {
  if (receive) expect(await receive.stop()).toBe(0);
  receive = undefined;
});

async function startReceive(port: number, extra: string[] = []): Promise<() => string> {
  receive = startCliInProcess(['receive', '--port', String(port), ...extra]);
  const { stdout } = receive;
  await until(() => stdout().includes('receiving webhooks at'), 60_000, 'the receiver listening');
  return stdout;
}

async function post(port: number, body: string, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

describe('changefeed receive signing secret', () => {
  it('generates a whsec_ secret, prints it, refuses unsigned requests and accepts ones it signed', async () => {
    const port = await freePort();
    const output = await startReceive(port);
    const secret = /Your webhook signing secret is (whsec_\S+) \(\^C to quit\)/.exec(output())?.[1];
    expect(secret).toBeDefined();
    expect(isWebhookSecret(secret ?? '')).toBe(true);
    expect(Buffer.from((secret ?? '').slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);

    const body = JSON.stringify({ type: 'com.example.test' });
    expect(await post(port, body)).toBe(401);
    const timestamp = new Date();
    const signature = new Webhook(secret ?? '').sign('evt_signed', timestamp, body);
    const signed = {
      'webhook-id': 'evt_signed',
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': signature,
    };
    expect(await post(port, body, signed)).toBe(204);
    await until(() => output().includes('✓ evt_signed'), 30_000, 'the verified line');
  }, 120_000);

  it('accepts unsigned requests with --no-verify, and says so once at start', async () => {
    const port = await freePort();
    const output = await startReceive(port, ['--no-verify']);
    expect(output()).not.toContain('whsec_');
    expect(output().match(/--no-verify/g)).toHaveLength(1);
    expect(await post(port, JSON.stringify({ type: 'com.example.unsigned' }))).toBe(204);
    await until(() => output().includes('com.example.unsigned'), 30_000, 'the accepted line');
    expect(output()).toContain('✗ ');
  }, 120_000);
});
