import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { listenBounded, listenerPortSchema, type BoundedListener } from '../boundedListener.js';
import { wholeExposition } from './processMetrics.js';

export const httpConfigSchema = z
  .object({
    port: listenerPortSchema.describe(
      'Port of the health, readiness and metrics server; null (the default) keeps it off. The ' +
        'container image sets 9464.',
    ),
    host: z
      .string()
      .default('127.0.0.1')
      .describe('Interface it binds to; loopback unless set (the container image sets 0.0.0.0).'),
    sinkGraceSeconds: z
      .number()
      .int()
      .min(0)
      .max(604_800)
      .default(300)
      .describe('A sink that lost its connection still counts as ready for this long while it reconnects.'),
    maxConnections: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(1024)
      .describe(
        'Most connections the server holds at once (probes, metrics); more are ' +
          'closed as they arrive, so idle connections from whoever reaches the port cannot use up file descriptors.',
      ),
    headersTimeoutSeconds: z
      .number()
      .int()
      .min(1)
      .max(120)
      .default(10)
      .describe(
        'A client must send its request head within this many seconds of connecting, or its connection is ' +
          'closed: silent or slow connections cannot hold every place of `maxConnections` and starve the probes.',
      ),
  })
  .strict();

export type HttpConfig = z.infer<typeof httpConfigSchema>;

export interface ReadinessCheck {
  name: string;
  ok: boolean;
  detail?: string;
  /** Reported, failing or not, without deciding readiness (one tenant's checks among many). */
  advisory?: boolean;
}

export interface HealthSource {
  /** True while the daemon's loops run: liveness. */
  alive(): boolean;
  /** Every readiness check, each with what fails. */
  readiness(): ReadinessCheck[];
  /** The exposition, written a part at a time (ProcessMetrics.write). */
  metrics: { write(write: (part: string) => Promise<void>): Promise<void>; readonly contentType: string };
}

export type HealthServer = BoundedListener;

/** Another part served on this listener under paths of its own (the operator console). */
export interface MountedRoutes {
  owns(path: string): boolean;
  /** Answers the request; never throws. */
  handle(req: IncomingMessage, res: ServerResponse): void;
}

/**
 * `/healthz` (liveness: 200 while the daemon's loops run), `/readyz` (200 only when every check
 * passes; the JSON body says which fails) and `/metrics` (Prometheus text format).
 */
export function startHealthServer(
  config: HttpConfig,
  source: HealthSource,
  mounted?: MountedRoutes,
): Promise<HealthServer> {
  // Anyone who reaches the port may open connections before any token is checked: bounded.
  return listenBounded(config, (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (mounted?.owns(path)) {
      mounted.handle(req, res);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    if (path === '/healthz') {
      const alive = source.alive();
      res
        .writeHead(alive ? 200 : 503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status: alive ? 'alive' : 'stopped' }));
      return;
    }
    if (path === '/readyz') {
      const checks = source.readiness();
      const ready = checks.every((c) => c.ok || c.advisory === true);
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ ready, checks }));
      return;
    }
    if (path === '/metrics') {
      // A failure after the first part was sent: the response is cut short.
      // HTTP/1.0 has no chunked encoding: a response cut short would read as a whole exposition.
      const serve = req.httpVersion === '1.0' ? serveMetricsWhole : serveMetrics;
      serve(source.metrics, res).catch(() => res.destroy());
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /healthz, /readyz or /metrics\n');
  });
}

/**
 * Streams the exposition a metric at a time, each part sent before the next is rendered: built
 * whole, the exposition of 5,000 tenants (38 MB of text, 445,000 series) held about 200 MB of
 * heap at once. A failure before the first part is a 500; after it, the response is cut short,
 * which an HTTP/1.1 scraper reports as a failed scrape (an HTTP/1.0 one gets serveMetricsWhole).
 * Rendering stops once the scraper left.
 */
async function serveMetrics(metrics: HealthSource['metrics'], res: ServerResponse): Promise<void> {
  try {
    await metrics.write(async (part) => {
      // Nobody to render the rest for (a scraper past its timeout): each part left reads stores.
      if (res.destroyed) throw new Error('the scraper left');
      if (!res.headersSent) res.writeHead(200, { 'content-type': metrics.contentType });
      if (!res.write(part)) await drainedOrClosed(res);
    });
  } catch (error) {
    if (res.headersSent || res.destroyed) throw error;
    refuseMetrics(res, error);
    return;
  }
  if (!res.headersSent) res.writeHead(200, { 'content-type': metrics.contentType });
  res.end();
}

/** The exposition rendered whole before anything is sent, for a client that cannot tell a cut. */
async function serveMetricsWhole(metrics: HealthSource['metrics'], res: ServerResponse): Promise<void> {
  let text: string;
  try {
    text = await wholeExposition(metrics);
  } catch (error) {
    refuseMetrics(res, error);
    return;
  }
  res.writeHead(200, { 'content-type': metrics.contentType }).end(text);
}

function refuseMetrics(res: ServerResponse, error: unknown): void {
  res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(error)}`);
}

/** Resolves when the response takes more, or when it is gone (the scraper left). */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
