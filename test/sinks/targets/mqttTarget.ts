import { readFileSync } from 'node:fs';
import { connectAsync, type IClientOptions } from 'mqtt';
import { missingBinary } from '../../support/requiredBinary.js';
import { pkiUnavailable, testPki, type TestPki } from '../../support/testPki.js';
import { startMosquittoTls } from '../../support/tlsServers.js';
import type { ConformanceReader, ConformanceTarget, ReadMessage } from '../conformance.js';

/** The machine's Mosquitto; with `tls`, a second mosquitto of the test's own with a TLS listener. */
const PLAIN_PORT = 1883;
const USERNAME = 'changefeed-conformance-user';
// Mosquitto here lets anonymous clients in and ignores credentials; they are set so the suite can
// check that they never show up in a message.
const PASSWORD = 'mqtt-conformance-Pa55word';

/** The conformance target of the mqtt sink, over plain TCP or, with `tls`, over mutual TLS (mqtts://). */
export function mqttTarget(options: { tls?: boolean } = {}): ConformanceTarget {
  let pki: TestPki | undefined;
  const brokerUrl = (port: number): string => `${pki ? 'mqtts' : 'mqtt'}://127.0.0.1:${port}`;
  const tlsOptions = (): IClientOptions =>
    pki
      ? {
          ca: readFileSync(pki.caFile),
          cert: readFileSync(pki.clientCertFile),
          key: readFileSync(pki.clientKeyFile),
        }
      : {};

  const target: ConformanceTarget = {
    type: 'mqtt',
    label: options.tls ? 'mqtt over TLS (mqtts://, client certificate)' : undefined,
    // With TLS, the port of the listener `unavailable` starts.
    brokerPort: options.tls ? 0 : PLAIN_PORT,
    connectionOriented: true,
    secrets: [USERNAME, PASSWORD],
    tenantHeader: 'tenant',
    // The broker keeps the order of QoS 1 messages per topic from one client (MQTT "ordered topic"),
    // and the sink publishes a batch in seq order on one connection. The suite's events all have
    // one type, so each object's events share the topic `<tag>/career/level_added`: order applies.
    // (Across topics MQTT promises no order; docs/sinks.md says to put `{subject}` in the topic.)
    cases: { readBack: true, orderedReadBack: true, dropConnections: true, downAtStart: true },
    timeouts: (ms) => ({ connectTimeoutMs: ms, timeoutMs: ms }),
    async unavailable() {
      if (options.tls) {
        const missing = pkiUnavailable() ?? missingBinary('mosquitto');
        if (missing) return missing;
        pki = testPki();
        target.brokerPort = (await startMosquittoTls(pki)).port;
      }
      try {
        const probe = await connectAsync(brokerUrl(target.brokerPort!), {
          reconnectPeriod: 0,
          connectTimeout: 2_000,
          ...tlsOptions(),
        });
        await probe.endAsync();
        return undefined;
      } catch (error) {
        return `no MQTT broker at ${brokerUrl(target.brokerPort!)}: ${(error as Error).message}`;
      }
    },
    sinkConfig: ({ name, tag, port }) => ({
      name,
      type: 'mqtt',
      url: brokerUrl(port),
      prefix: tag,
      // Unique per test, so parallel test files never take each other's session over.
      clientId: `pub-${tag}`,
      username: USERNAME,
      password: PASSWORD,
      ceUserProperties: true,
      sessionExpirySeconds: 10,
      connectTimeoutMs: 2_000,
      timeoutMs: 5_000,
      ...(pki ? { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile } : {}),
    }),
    async openReader({ tag, port }): Promise<ConformanceReader> {
      // A real subscriber, QoS 1. A large Receive Maximum lets Mosquitto send without waiting for
      // each PUBACK; with its default of 20 in flight, messages pile up in Mosquitto's per-client
      // queue, which drops QoS 1 messages beyond max_queued_messages (1,000).
      const client = await connectAsync(brokerUrl(port), {
        reconnectPeriod: 0,
        protocolVersion: 5,
        clientId: `sub-${tag}`,
        clean: true,
        properties: { receiveMaximum: 65_535 },
        ...tlsOptions(),
      });
      const messages: ReadMessage[] = [];
      client.on('message', (_topic, payload, packet) => {
        const body = payload.toString('utf8');
        const headers = Object.fromEntries(
          Object.entries(packet.properties?.userProperties ?? {}).map(([k, v]) => [k, String(v)]),
        );
        messages.push({ id: (JSON.parse(body) as { id: string }).id, body, headers });
      });
      await client.subscribeAsync(`${tag}/#`, { qos: 1 });
      const ids = new Set<string>();
      client.on('message', (_topic, payload) => ids.add((JSON.parse(payload.toString('utf8')) as { id: string }).id));
      return {
        // Counts distinct events, as a deduplicating consumer would: after a lost connection the
        // re-sent batch brings duplicates, which must not make the wait end before the rest arrived.
        async waitFor(count, timeoutMs) {
          const until = Date.now() + timeoutMs;
          while (ids.size < count && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
          return [...messages];
        },
        close: async () => {
          await client.endAsync(true);
        },
      };
    },
  };
  return target;
}
