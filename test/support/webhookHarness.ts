import { join } from 'node:path';
import type { Clock } from '../../src/clock.js';
import { DeliveryEngine } from '../../src/deliver/deliveryEngine.js';
import { type Logger } from '../../src/observe/createLogger.js';
import { noopLogger } from './noopLogger.js';
import {
  startWebhookReceiver,
  type ReceivedWebhook,
  type ReceiverOptions,
  type WebhookReceiver,
} from '../../src/receiver/webhookReceiver.js';
import { createSink, sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';
import type { SqliteChangefeedStore } from '../../src/store/sqlite/sqliteStore.js';
import { closeAfterTest } from './closeAfterTest.js';
import { prefilledStore } from './prefilledStore.js';
import { makeTempDir } from './tempDir.js';

export const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const ROTATED_SECRET = 'whsec_c2Vjb25kLXNlY3JldC1vZi1zaXh0ZWVuIGJ5dGVz';

/** A receiver that keeps every request it answered, in arrival order. */
export interface CollectingReceiver extends WebhookReceiver {
  readonly received: readonly ReceivedWebhook[];
  /** Requests so far (`received.length`). */
  readonly count: number;
}

/** A verifying receiver on loopback that keeps what it receives, closed after the test. */
export async function receiver(options: ReceiverOptions = {}): Promise<CollectingReceiver> {
  const received: ReceivedWebhook[] = [];
  const r = await startWebhookReceiver({
    secrets: [SECRET],
    ...options,
    onWebhook: (request) => {
      received.push(request);
      options.onWebhook?.(request);
    },
  });
  closeAfterTest(() => r.close());
  return {
    url: r.url,
    close: () => r.close(),
    received,
    get count() {
      return received.length;
    },
  };
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
