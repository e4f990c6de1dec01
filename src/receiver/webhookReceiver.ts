import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { Webhook } from 'standardwebhooks';

/** One request as the receiver saw it. */
export interface ReceivedWebhook {
  id: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** True when a configured secret verified the signature (always false without secrets). */
  verified: boolean;
  /** Why verification failed, when it did. */
  verifyError?: string;
  receivedAt: number;
}

export interface ReceiverOptions {
  host?: string;
  port?: number;
  /** Secrets a signature may match (several during a rotation). Unverified requests get 401. */
  secrets?: readonly string[];
  onWebhook?: (request: ReceivedWebhook) => void;
  /** Largest request body accepted; larger ones get 413 (before reading, when Content-Length says so). Default 16 MiB. */
  maxBodyBytes?: number;
}

export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface WebhookReceiver {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A webhook endpoint that verifies Standard Webhooks signatures with the `standardwebhooks`
 * package (not our own signing code), for `changefeed receive`, the demo and the tests.
 */
export async function startWebhookReceiver(options: ReceiverOptions = {}): Promise<WebhookReceiver> {
  const verifiers = (options.secrets ?? []).map((s) => new Webhook(s));
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const server: Server = createServer((req, res) => {
    // Unauthenticated senders must not exhaust memory: nothing is buffered beyond the cap, and a
    // declared length above it is refused before reading.
    const tooLarge = (): void => {
      if (res.headersSent) return;
      // The answer first, then the connection goes. Closing at once would reset it while the
      // sender still writes, and a reset can destroy the 413 before the sender reads it: what
      // arrives meanwhile is discarded unbuffered, for a second at most.
      req.removeAllListeners('data');
      req.resume();
      res.on('finish', () => setTimeout(() => req.socket.destroy(), 1_000).unref());
      res
        .writeHead(413, { 'content-type': 'text/plain', connection: 'close' })
        .end(`request body larger than ${maxBodyBytes} bytes\n`);
    };
    if (Number(req.headers['content-length']) > maxBodyBytes) {
      tooLarge();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBodyBytes) {
        chunks.length = 0;
        tooLarge();
        return;
      }
      chunks.push(c);
    });
    req.on('error', () => undefined);
    req.on('end', () => {
      if (size > maxBodyBytes) return;
      const body = Buffer.concat(chunks).toString('utf8');
      const request: ReceivedWebhook = {
        id: String(req.headers['webhook-id'] ?? ''),
        headers: req.headers,
        body,
        verified: false,
        receivedAt: Date.now(),
      };
      if (verifiers.length > 0) verify(request, verifiers);
      options.onWebhook?.(request);
      // A refusal says why, so the sender's status and logs show it.
      if (verifiers.length === 0 || request.verified) res.writeHead(204).end();
      else res.writeHead(401).end(`webhook signature not verified: ${request.verifyError ?? 'no signature'}\n`);
    });
  });
  // once() rejects on 'error': a bind failure (EADDRINUSE) is reported, not a crash.
  await once(server.listen(options.port ?? 0, options.host ?? '127.0.0.1'), 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}/webhooks`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function verify(request: ReceivedWebhook, verifiers: readonly Webhook[]): void {
  const headers = {
    'webhook-id': request.id,
    'webhook-timestamp': String(request.headers['webhook-timestamp'] ?? ''),
    'webhook-signature': String(request.headers['webhook-signature'] ?? ''),
  };
  for (const verifier of verifiers) {
    try {
      verifier.verify(request.body, headers);
      request.verified = true;
      delete request.verifyError;
      return;
    } catch (error) {
      request.verifyError = error instanceof Error ? error.message : String(error);
    }
  }
}
