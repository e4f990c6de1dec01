import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchRow } from '../benchTable.js';

const ROOT = join(import.meta.dirname, '..', '..');
const KEY = 'sim_live_bench0000000000000000000000000000';

type Hostility =
  | 'page of 100,000 entries'
  | 'body of 200 MB'
  | 'body of 200 MB, padding before data'
  | 'log with an oversized entry at 64 of every 65 offsets';

/** More than api.maxResponseBytes (16 MiB by default): declared, so the client reads only its head. */
const OVERSIZED_DECLARED_BYTES = 17 * 1024 * 1024;

/** A stand-in for the service that answers every activity read with `hostility`. */
async function hostileService(hostility: Hostility): Promise<Server> {
  const entry = (i: number) =>
    JSON.stringify({
      id: `e-${i}`,
      event: 'level_added',
      description: 'a hostile page',
      performedAt: new Date(Date.now() - 1_000).toISOString(),
    });
  const server = createServer((req, res) => {
    const headers = {
      'content-type': 'application/json',
      date: new Date().toUTCString(),
      'ratelimit-limit': '1000000',
      'ratelimit-remaining': '999999',
      'ratelimit-reset': '3600',
    };
    if (!req.url?.includes('/activity')) {
      res.writeHead(200, headers).end('{"data":[]}');
      return;
    }
    if (hostility === 'log with an oversized entry at 64 of every 65 offsets') {
      // Every 65th offset holds a readable entry, which ends any run of oversized ones in a row.
      const offset = Number(new URL(req.url, 'http://x').searchParams.get('offset'));
      if (offset % 65 === 64) {
        res.writeHead(200, headers).end(`{"data":[${entry(offset)}]}`);
        return;
      }
      res.writeHead(200, { ...headers, 'content-length': String(OVERSIZED_DECLARED_BYTES) });
      res.on('error', () => undefined);
      // The head the client keeps; it discards the rest unread.
      res.write(`{"data":[${entry(offset).slice(0, -1)},"padding":"${'a'.repeat(96 * 1024)}`);
      return;
    }
    res.writeHead(200, headers);
    res.on('error', () => undefined);
    if (hostility === 'page of 100,000 entries') {
      res.end(`{"data":[${Array.from({ length: 100_000 }, (_, i) => entry(i)).join(',')}]}`);
      return;
    }
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    let sent = 0;
    const paddingFirst = hostility === 'body of 200 MB, padding before data';
    res.write(paddingFirst ? '{"padding":"' : '{"data":[],"padding":"');
    const pump = (): void => {
      while (sent < 200) {
        sent++;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      res.end(paddingFirst ? '","data":[]}' : '"}');
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/**
 * Peak RSS of `changefeed run --once` (a real process, measured by /usr/bin/time -v) polling a
 * service that answers with a hostile page. Before the limits: 2.86 GB for 100,000 entries and
 * 2.19 GB for a 200 MB body; with a readable entry after every 64 oversized ones, a walk bounded
 * only by oversized entries in a row passed 640 MB in 150 s and went on. Target: under 200 MB in
 * every case.
 */
export async function hostilePage(hostility: Hostility): Promise<BenchRow> {
  const server = await hostileService(hostility);
  const dir = mkdtempSync(join(tmpdir(), 'changefeed-bench-hostile-'));
  try {
    const config = join(dir, 'changefeed.yaml');
    writeFileSync(
      config,
      [
        `api: { baseUrl: "http://127.0.0.1:${(server.address() as AddressInfo).port}" }`,
        'watch: { careers: { ids: [c-1] }, identityProviderEvents: false, startFrom: ' +
          '"2000-01-01T00:00:00Z", schedule: { historyHours: 0 } }',
        'budget: { readsPerHour: 3600000, reserve: 0 }',
        `stateDir: ${join(dir, 'state')}`,
        `sinks: [{ name: out, type: file, path: ${join(dir, 'events.jsonl')} }]`,
        'log: { level: silent }',
      ].join('\n'),
    );
    const started = Date.now();
    const { status, stderr } = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const child = spawn(
        '/usr/bin/time',
        ['-v', process.execPath, join(ROOT, 'dist/cli/changefeed.js'), 'run', '--once', '--config', config],
        {
          cwd: ROOT,
          env: { ...process.env, CHANGEFEED_API_KEY: KEY, CHANGEFEED_CONFIG: '' },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let text = '';
      child.stderr.on('data', (c: Buffer) => (text += c.toString()));
      child.on('exit', (code) => resolve({ status: code, stderr: text }));
    });
    const rssKiB = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)?.[1] ?? Number.NaN);
    return {
      case: `run --once against a ${hostility}`,
      'peak RSS MiB': Math.round(rssKiB / 1024),
      'exit code': String(status),
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
