import { startWebhookReceiver, type WebhookReceiver } from '../../src/receiver/webhookReceiver.js';
import { runSinkConformance, type ConformanceReader, type ReadMessage } from './conformance.js';
import { SECRET } from '../support/webhookHarness.js';

let receiver: WebhookReceiver | undefined;
const readers = new Map<string, ReadMessage[]>();

const target = {
  type: 'webhook',
  brokerPort: undefined as number | undefined,
  secrets: [SECRET, SECRET.slice('whsec_'.length)],
  cases: { readBack: true, orderedReadBack: true, dropConnections: true, downAtStart: true },
  async unavailable() {
    // One receiver for the file; messages are sorted to readers by the tag in the URL path.
    receiver = await startWebhookReceiver({
      secrets: [SECRET],
      keepReceived: false,
      onWebhook: (r) => {
        const tag = String(r.headers['x-conformance-tag'] ?? '');
        if (!r.verified) return;
        readers.get(tag)?.push({
          id: r.id,
          body: r.body,
          headers: Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)])),
        });
      },
    });
    target.brokerPort = Number(new URL(receiver.url).port);
    return undefined;
  },
  sinkConfig: ({ name, tag, port }: { name: string; tag: string; port: number }) => ({
    name,
    type: 'webhook',
    url: `http://127.0.0.1:${port}/webhooks`,
    secret: SECRET,
    timeoutMs: 2_000,
    headers: { 'x-conformance-tag': tag },
    delivery: { maxInFlight: 8 },
  }),
  openReader({ tag }: { tag: string }): Promise<ConformanceReader> {
    const messages: ReadMessage[] = [];
    readers.set(tag, messages);
    return Promise.resolve({
      async waitFor(count, timeoutMs) {
        const until = Date.now() + timeoutMs;
        while (messages.length < count && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
        return [...messages];
      },
      close: () => {
        readers.delete(tag);
        return Promise.resolve();
      },
    });
  },
};

runSinkConformance(target);
