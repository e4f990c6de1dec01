import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchHolderReadiness } from '../../src/cli/liveSinkState.js';
import { httpConfigSchema } from '../../src/observe/healthServer.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const checks = [{ name: 'acme/sink:out', ok: true, detail: 'connected' }];
const noPort = httpConfigSchema.parse({});

describe('status asking the holder of a tenant', () => {
  it("asks the holder's advertised URL and names the holder", async () => {
    const url = await serve((req, res) => res.end(JSON.stringify({ ready: true, checks, path: req.url })));
    const holder = { kind: 'held' as const, holder: 'replica-b', live: true, url: undefined, healthUrl: `${url}/b` };
    expect(await fetchHolderReadiness(noPort, holder, 'acme/', 'acme')).toEqual({
      reachable: true,
      url: `${url}/b/readyz`,
      checks,
      holder: 'replica-b',
    });
  });

  it('stops reading an advertised URL that answers more than /readyz can be', async () => {
    let written = 0;
    const url = await serve((_, res) => {
      res.writeHead(200);
      const more = (): void => {
        while (written < 64 * 1024 * 1024 && res.write(Buffer.alloc(64 * 1024, 0x20))) written += 64 * 1024;
        if (written < 64 * 1024 * 1024) res.once('drain', more);
      };
      more();
    });
    const holder = { kind: 'held' as const, holder: 'replica-b', live: true, url: undefined, healthUrl: url };
    const answer = await fetchHolderReadiness(noPort, holder, 'acme/', 'acme');
    expect(answer).toMatchObject({ reachable: false, reason: 'the answer is too large to be the daemon' });
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('does not take a local daemon that does not run the tenant for its holder', async () => {
    const url = await serve((_, res) =>
      res.end(JSON.stringify({ ready: true, checks: [{ name: 'other/sink:out', ok: true }] })),
    );
    const http = httpConfigSchema.parse({ port: Number(new URL(url).port) });
    const holder = { kind: 'held' as const, holder: 'replica-b', live: true, url: 'http://x', healthUrl: undefined };
    expect(await fetchHolderReadiness(http, holder, 'acme/', 'acme')).toMatchObject({
      reachable: false,
      holder: 'replica-b',
      reason: expect.stringContaining('sets no cluster.advertiseHealthUrl') as unknown,
    });
  });

  it('says nobody holds a free tenant, without asking anyone', async () => {
    expect(await fetchHolderReadiness(noPort, { kind: 'unheld' }, 'acme/', 'acme')).toMatchObject({
      reachable: false,
      url: null,
      reason: 'no replica holds tenant acme now (its lease is free)',
    });
  });
});
