import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** How often Node looks for connections past their header timeout: a small part of it. */
const CHECK_INTERVAL_MS = 500;

/**
 * Server options that close a connection whose request head has not arrived within `timeoutMs`
 * (a slowloris). A request has no body worth waiting for, so the whole request gets as long.
 */
export function headTimeoutOptions(timeoutMs: number) {
  return {
    headersTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    connectionsCheckingInterval: Math.min(CHECK_INTERVAL_MS, timeoutMs),
    keepAliveTimeout: 5_000,
  };
}

/**
 * Node times out a request head only once its first byte came: a connection that sends nothing
 * would hold its place under `maxConnections` until the client leaves. It gets `timeoutMs` for its
 * first request too. With headTimeoutOptions, whoever reaches the port cannot fill it for long.
 */
export function closeSilentConnections(server: Server, timeoutMs: number): void {
  const silent = new WeakMap<Socket, NodeJS.Timeout>();
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    silent.set(socket, timer);
    socket.once('close', () => clearTimeout(timer));
  });
  server.on('request', (req: { socket: Socket }) => clearTimeout(silent.get(req.socket)));
}
