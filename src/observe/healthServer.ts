import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { z } from 'zod';
import {
  headersTimeoutSecondsSchema,
  listenBounded,
  listenerPortSchema,
  maxConnectionsSchema,
  type BoundedListener,
} from '../boundedListener.js';
import { writeTimeoutSecondsSchema, writeWithin } from '../writeWithin.js';
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
    maxConnections: maxConnectionsSchema(1024).describe(
      'Most connections the server holds at once (probes, metrics); more are ' +
        'closed as they arrive, so idle connections from whoever reaches the port cannot use up file descriptors.',
    ),
    headersTimeoutSeconds: headersTimeoutSecondsSchema.describe(
      'A client must send its request head within this many seconds of connecting, or its connection is ' +
        'closed: silent or slow connections cannot hold every place of `maxConnections` and starve the probes.',
    ),
    writeTimeoutSeconds: writeTimeoutSecondsSchema.describe(
      'A streamed answer (a `/metrics` scrape, a console live tail) whose client takes none of a part for this ' +
        'many seconds is cut off: a scraper that connects and never reads cannot hold its scrape, and the ' +
        'series it was sent, for ever.',
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
  /** Where a failed exposition is told (its error scrubbed, as every log line is); the scraper gets a fixed answer. */
  logger?: Pick<Logger, 'warn'> | undefined;
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
      // HTTP/1.0 has no chunked encoding: a response cut short would read as a whole exposition.
      const serve = req.httpVersion === '1.0' ? serveMetricsWhole : serveMetrics;
      serve(source, res, config.writeTimeoutSeconds * 1000).catch(() => res.destroy());
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /healthz, /readyz or /metrics\n');
  });
}

/**
 * Streams the exposition a part at a time (ProcessMetrics.write). A failure before the first part
 * is a 500; after it, the response is cut short, which an HTTP/1.1 scraper reports as a failed
 * scrape. Rendering stops once the scraper left, or took no part for `writeTimeoutMs` (writeWithin).
 */
async function serveMetrics(source: HealthSource, res: ServerResponse, writeTimeoutMs: number): Promise<void> {
  const { metrics } = source;
  try {
    await metrics.write(async (part) => {
      // Nobody to render the rest for (a scraper past its timeout): each part left reads stores.
      if (res.destroyed) throw new Error('the scraper left');
      if (!res.headersSent) res.writeHead(200, { 'content-type': metrics.contentType });
      await writeWithin(res, part, writeTimeoutMs);
    });
  } catch (error) {
    if (res.headersSent || res.destroyed) throw error;
    refuseMetrics(source, res, error);
    return;
  }
  if (!res.headersSent) res.writeHead(200, { 'content-type': metrics.contentType });
  if (!res.destroyed) res.end();
}

/** The exposition rendered whole before anything is sent, for a client that cannot tell a cut. */
async function serveMetricsWhole(source: HealthSource, res: ServerResponse, writeTimeoutMs: number): Promise<void> {
  let text: string;
  try {
    text = await wholeExposition(source.metrics);
  } catch (error) {
    refuseMetrics(source, res, error);
    return;
  }
  res.writeHead(200, { 'content-type': source.metrics.contentType });
  await writeWithin(res, text, writeTimeoutMs);
  if (!res.destroyed) res.end();
}

/**
 * The scraper's answer to a failed exposition: fixed, with a stable code. Whoever reaches the port
 * may scrape, and the error's text can name the database, its address or the role; it goes to the
 * log, whose lines are scrubbed of secrets.
 */
export const METRICS_FAILED_BODY = 'metrics-unavailable: the exposition failed; the daemon log says why\n';

function refuseMetrics(source: HealthSource, res: ServerResponse, error: unknown): void {
  source.logger?.warn({ err: error, code: 'metrics-unavailable' }, 'a /metrics scrape failed');
  res.writeHead(500, { 'content-type': 'text/plain' }).end(METRICS_FAILED_BODY);
}
