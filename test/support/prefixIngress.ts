import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServerAfterTest } from './closeAfterTest.js';

/**
 * One origin in front of several replicas, as a Kubernetes ingress routing `/<name>/...` to each
 * pod: `/<name>/rest` is passed to the backend `<name>` as `/rest`, headers and body streamed
 * both ways, a redirect's Location left as the backend wrote it. Returns the ingress's base URL.
 */
export async function startPrefixIngress(backends: ReadonlyMap<string, number>): Promise<string> {
  const server = createServer((req, res) => {
    const match = /^\/([^/]+)(\/.*)$/.exec(req.url ?? '/');
    const port = match ? backends.get(match[1]!) : undefined;
    if (!match || port === undefined) {
      res.writeHead(404).end();
      return;
    }
    const upstream = request(
      { host: '127.0.0.1', port, method: req.method, path: match[2], headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  closeServerAfterTest(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
