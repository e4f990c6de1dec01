import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import type { Clock } from '../../src/clock.js';
import { DeliveryEngine } from '../../src/deliver/deliveryEngine.js';
import type { Logger } from '../../src/observe/createLogger.js';
import { noopLogger } from './noopLogger.js';
import type { ReceivedWebhook, WebhookReceiver } from '../../src/receiver/webhookReceiver.js';
import { createSink, sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { closeAfterTest } from './closeAfterTest.js';
import { prefilledStore } from './prefilledStore.js';
import { makeTempDir } from './tempDir.js';

export const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const ROTATED_SECRET = 'whsec_c2Vjb25kLXNlY3JldC1vZi1zaXh0ZWVuIGJ5dGVz';

/** What a scripted receiver answers; `drop` destroys the socket without answering. */
export interface ScriptedReply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
  drop?: boolean;
}

export interface ScriptOptions {
  /** Secrets a signature may match; `[SECRET]` unless given. */
  secrets?: readonly string[];
  /**
   * The answer to the `count`th request; 204 for a verified one, 401 otherwise, when it returns
   * undefined. A promise holds the request in flight until it settles.
   */
  respond?: (request: ReceivedWebhook, count: number) => ScriptedReply | Promise<ScriptedReply> | undefined;
  onWebhook?: (request: ReceivedWebhook) => void;
}

/** A receiver that keeps every request it answered, in arrival order. */
export interface CollectingReceiver extends WebhookReceiver {
  readonly received: readonly ReceivedWebhook[];
  /** Requests so far (`received.length`). */
  readonly count: number;
}

/**
 * A webhook endpoint on loopback whose answers a test scripts, verifying signatures with the
 * `standardwebhooks` package as `changefeed receive` does; the caller closes it.
 */
export async function startScriptedReceiver(options: ScriptOptions = {}): Promise<CollectingReceiver> {
  const received: ReceivedWebhook[] = [];
  const verifiers = (options.secrets ?? [SECRET]).map((secret) => new Webhook(secret));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedWebhook = {
        id: String(req.headers['webhook-id'] ?? ''),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        verified: false,
        receivedAt: Date.now(),
      };
      for (const verifier of verifiers) {
        try {
          verifier.verify(request.body, {
            'webhook-id': request.id,
            'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
            'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
          });
          request.verified = true;
        } catch (error) {
          request.verifyError ??= (error as Error).message;
        }
      }
      received.push(request);
      options.onWebhook?.(request);
      const fallback = { status: request.verified ? 204 : 401 };
      Promise.resolve(options.respond?.(request, received.length) ?? fallback).then(
        (reply) => answer(res, reply),
        () => answer(res, { drop: true }),
      );
    });
  });
  await once(server.listen(0, '127.0.0.1'), 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
    received,
    get count() {
      return received.length;
    },
  };
}

function answer(res: ServerResponse, reply: ScriptedReply): void {
  const send = (): void => {
    if (reply.drop) res.socket?.destroy();
    else res.writeHead(reply.status ?? 204, reply.headers).end(reply.body);
  };
  if (reply.delayMs) setTimeout(send, reply.delayMs);
  else send();
}

/** A scripted receiver (startScriptedReceiver), closed after the test. */
export async function receiver(options: ScriptOptions = {}): Promise<CollectingReceiver> {
  const r = await startScriptedReceiver(options);
  closeAfterTest(() => r.close());
  return r;
}

/** A store in a temp dir with `count` events over `objects` careers, for one sink named `hook`. */
export function storeWithEvents(
  count: number,
  objects: number,
  tenant?: string,
): Promise<{ store: SqliteChangefeedStore; dir: string }> {
  return prefilledStore(count, [{ name: 'hook', type: 'webhook' }], objects, makeTempDir(), tenant);
}

/** A delivery engine with one webhook sink named `hook`; `sink` settings are merged over url and secret. */
export function webhookEngine(args: {
  store: SqliteChangefeedStore;
  url: string;
  clock: Clock;
  sink?: Record<string, unknown>;
  logger?: Logger;
  random?: () => number;
}) {
  const config = sinkConfigSchema.parse({ name: 'hook', type: 'webhook', url: args.url, secret: SECRET, ...args.sink });
  return new DeliveryEngine([{ sink: createSink(config), delivery: config.delivery, filter: config.filter }], {
    store: args.store,
    clock: args.clock,
    logger: args.logger ?? noopLogger,
    random: args.random ?? (() => 0.5),
  });
}

export const storeFile = (dir: string): string => join(dir, 'changefeed.sqlite');
