import { afterAll } from 'vitest';
import { startWebhookReceiver, type WebhookReceiver } from '../../../src/receiver/webhookReceiver.js';
import { pkiUnavailable, testPki, type TestPki } from '../../support/testPki.js';
import { startTlsTerminator } from '../../support/tlsServers.js';
import { SECRET } from '../../support/webhookHarness.js';
import type { ConformanceReader, ConformanceTarget, ReadMessage } from '../conformance.js';

/**
 * The conformance target of the webhook sink: a verifying receiver on loopback, over http or,
 * with `tls`, over https with a client certificate (a TLS-terminating proxy in front of it).
 */
export function webhookTarget(options: { tls?: boolean } = {}): ConformanceTarget {
  let receiver: WebhookReceiver | undefined;
  let pki: TestPki | undefined;
  const readers = new Map<string, ReadMessage[]>();
  afterAll(async () => {
    await receiver?.close();
  });

  const target: ConformanceTarget = {
    type: 'webhook',
    label: options.tls ? 'webhook over https (private CA, client certificate)' : undefined,
    // Set once the receiver listens: http's port, or the TLS proxy's.
    brokerPort: options.tls ? 0 : undefined,
    secrets: [SECRET, SECRET.slice('whsec_'.length)],
    cases: { readBack: true, orderedReadBack: true, dropConnections: true, downAtStart: true },
    async unavailable() {
      if (options.tls) {
        const missing = pkiUnavailable();
        if (missing) return missing;
        pki = testPki();
      }
      // One receiver for the file; messages are sorted to readers by the tag in the URL path.
      receiver = await startWebhookReceiver({
        secrets: [SECRET],
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
      const port = Number(new URL(receiver.url).port);
      target.brokerPort = pki ? (await startTlsTerminator(pki, port)).port : port;
      return undefined;
    },
    sinkConfig: ({ name, tag, port }) => ({
      name,
      type: 'webhook',
      url: `${pki ? 'https' : 'http'}://127.0.0.1:${port}/webhooks`,
      secret: SECRET,
      timeoutMs: 2_000,
      headers: { 'x-conformance-tag': tag },
      delivery: { maxInFlight: 8 },
      ...(pki ? { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile } : {}),
    }),
    openReader({ tag }): Promise<ConformanceReader> {
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
  return target;
}
