import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { z } from 'zod';

/** How often Node looks for connections past their header timeout: a small part of it. */
const CHECK_INTERVAL_MS = 500;

/**
 * Server options that close a connection whose request head has not arrived within `timeoutMs`
 * (a slowloris). A request has no body worth waiting for, so the whole request gets as long.
 */
function headTimeoutOptions(timeoutMs: number) {
  return {
    headersTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    connectionsCheckingInterval: Math.min(CHECK_INTERVAL_MS, timeoutMs),
    keepAliveTimeout: 5_000,
  };
}

/**
 * Closes a connection that has sent no request by `timeoutMs` after it came, unanswered. Node's own
 * header check (headTimeoutOptions) closes it too, but only at its next round, up to
 * `connectionsCheckingInterval` late, after answering 408; it comes first only when the event loop
 * ran late.
 */
function closeSilentConnections(server: Server, timeoutMs: number): void {
  const silent = new WeakMap<Socket, NodeJS.Timeout>();
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    silent.set(socket, timer);
    socket.once('close', () => clearTimeout(timer));
  });
  server.on('request', (req: { socket: Socket }) => clearTimeout(silent.get(req.socket)));
}

/** Requests one connection may send ahead of the one being answered (HTTP/1.1 pipelining). */
export const PIPELINED_AHEAD = 8;

/**
 * Hands `handle` one request of a connection at a time. Node starts every request a client
 * pipelined as soon as it parses them (hundreds from one packet), and only holds back their
 * answers: one connection would have as many `/metrics` scrapes rendered, or pages read, at once.
 * A request waits until the answer before it is done; a connection more than PIPELINED_AHEAD
 * requests ahead is closed, so what waits stays small.
 */
function oneRequestAtATime(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  const queues = new WeakMap<Socket, (() => void)[]>();
  return (req, res) => {
    // Requests parsed from the same packet still arrive after their connection was closed.
    if (req.socket.destroyed) return;
    const run = (): void => {
      res.once('close', () => {
        const queue = queues.get(req.socket);
        queue?.shift();
        // A connection gone takes the requests it sent ahead with it.
        if (!req.socket.destroyed) queue?.[0]?.();
      });
      handle(req, res);
    };
    const queue = queues.get(req.socket);
    if (queue === undefined || queue.length === 0) {
      queues.set(req.socket, [run]);
      run();
    } else if (queue.length > PIPELINED_AHEAD) {
      queue.length = 0;
      req.socket.destroy();
    } else queue.push(run);
  };
}

/** The port a listener binds: null keeps it off, 0 takes a free one. Each listener describes its own. */
export const listenerPortSchema = z.number().int().min(0).max(65_535).nullable().default(null);
/** Connections a listener holds at once; each listener gives its own default. */
export const maxConnectionsSchema = (defaultCount: number) =>
  z.number().int().min(1).max(100_000).default(defaultCount);
/** Seconds a connection has to send its request head. */
export const headersTimeoutSecondsSchema = z.number().int().min(1).max(120).default(10);

/** Where a bounded listener binds, and its bounds against whoever reaches the port. */
export interface BoundedListenerConfig {
  /** 0 or null: a free port. */
  port: number | null;
  host: string;
  /** Connections beyond it are closed as they arrive. */
  maxConnections: number;
  /** A connection that has not sent its request head within this is closed. */
  headersTimeoutSeconds: number;
}

export interface BoundedListener {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * An HTTP listener that anyone who reaches its port may open connections to before any token is
 * checked (the health server, the feed): their number is capped and a connection that sends no
 * request head in time is closed, so a flood cannot hold the port. Answers already under way
 * (streams, long-polls) are not bounded by the timeouts.
 */
export async function listenBounded(
  config: BoundedListenerConfig,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<BoundedListener> {
  const timeoutMs = config.headersTimeoutSeconds * 1000;
  const server: Server = createServer(headTimeoutOptions(timeoutMs), oneRequestAtATime(handle));
  server.maxConnections = config.maxConnections;
  closeSilentConnections(server, timeoutMs);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port ?? 0, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
