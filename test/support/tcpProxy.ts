import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A loopback TCP proxy in front of a real broker, so a test can take the broker "down" (refuse
 * connections), bring it back on the same port, or cut every open connection mid-stream, the
 * way a broker restart or a network fault would, without touching the broker itself.
 */
export interface TcpProxy {
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Cuts every open connection (both sides), as a broker restart would. */
  dropConnections(): void;
  /** Keeps connections open but forwards nothing more, in either direction: a broker gone silent. */
  freeze(): void;
  /** Forwards again what comes after (what was swallowed stays lost): the partition healed. */
  thaw(): void;
  /**
   * Accepts connections and closes each at once, before a byte is forwarded, while `on`: a server
   * up but failing every session (a load balancer with no backend, a crashing server).
   */
  cutNewConnections(on: boolean): void;
  /** Bytes the client sent since the freeze, which went nowhere: shows that a write is under way. */
  readonly swallowed: number;
  /** Stops listening and cuts open connections: the broker looks down. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  let frozen = false;
  let cutting = false;
  let swallowed = 0;
  let server: Server | undefined;
  let port = 0;
  const listen = async (): Promise<void> => {
    const s = createServer((client) => {
      accepted++;
      if (cutting) {
        client.destroy();
        return;
      }
      const upstream = connect(targetPort, targetHost);
      sockets.add(client);
      sockets.add(upstream);
      const cleanup = (): void => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', cleanup).on('close', cleanup);
      upstream.on('error', cleanup).on('close', cleanup);
      client.on('data', (chunk: Buffer) => (frozen ? (swallowed += chunk.length) : upstream.write(chunk)));
      upstream.on('data', (chunk: Buffer) => frozen || client.write(chunk));
    });
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve());
    });
    port = (s.address() as AddressInfo).port;
    server = s;
  };
  const dropConnections = (): void => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };
  const stop = async (): Promise<void> => {
    const s = server;
    server = undefined;
    dropConnections();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await listen();
  return {
    get port() {
      return port;
    },
    get accepted() {
      return accepted;
    },
    get swallowed() {
      return swallowed;
    },
    dropConnections,
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
    },
    cutNewConnections: (on) => {
      cutting = on;
    },
    stop,
    start: listen,
    close: stop,
  };
}
