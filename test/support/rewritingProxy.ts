import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { closeServerAfterTest } from './closeAfterTest.js';

/** One answer of the real service as the proxy is about to pass it on; `rewrite` may change any part. */
export interface ProxiedAnswer {
  /** 1 for the first request through the proxy. */
  index: number;
  path: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A hostile stand-in for the service: forwards each request to `target` (the simulator) and lets
 * the test rewrite the answer (a Date header 30 days ahead, a bad entry in the page). Returns the
 * base URL to configure as api.baseUrl, keeping the target's path prefix.
 */
export async function startRewritingProxy(
  target: string,
  rewrite: (answer: ProxiedAnswer) => ProxiedAnswer,
): Promise<string> {
  const base = new URL(target);
  let index = 0;
  const server = createServer((req, res) => {
    const n = ++index;
    const path = req.url ?? '/';
    request(new URL(path, base.origin), { method: 'GET', headers: { authorization: req.headers.authorization ?? '' } })
      .then(async (upstream) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(upstream.headers)) {
          if (v !== undefined && !['content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(k))
            headers[k] = Array.isArray(v) ? v.join(', ') : v;
        }
        const answer = rewrite({
          index: n,
          path,
          status: upstream.statusCode,
          headers,
          body: await upstream.body.text(),
        });
        res.writeHead(answer.status, answer.headers).end(answer.body);
      })
      .catch((error: unknown) => res.writeHead(502).end(String(error)));
  });
  closeServerAfterTest(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}${base.pathname === '/' ? '' : base.pathname.replace(/\/$/, '')}`;
}
