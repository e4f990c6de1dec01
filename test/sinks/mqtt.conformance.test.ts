import { connectAsync } from 'mqtt';
import { runSinkConformance, type ConformanceReader, type ReadMessage } from './conformance.js';

const MQTT_PORT = 1883;
const USERNAME = 'changefeed-conformance-user';
// Mosquitto here lets anonymous clients in and ignores credentials; they are set so the suite can
// check that they never show up in a message.
const PASSWORD = 'mqtt-conformance-Pa55word';

runSinkConformance({
  type: 'mqtt',
  brokerPort: MQTT_PORT,
  connectionOriented: true,
  secrets: [USERNAME, PASSWORD],
  // The broker keeps the order of QoS 1 messages per topic from one client (MQTT "ordered topic"),
  // and the sink publishes a batch in seq order on one connection. The suite's events all have
  // one type, so each object's events share the topic `<tag>/career/level_added`: order applies.
  // (Across topics MQTT promises no order; docs/sinks.md says to put `{subject}` in the topic.)
  cases: { readBack: true, orderedReadBack: true, dropConnections: true, downAtStart: true },
  timeouts: (ms) => ({ connectTimeoutMs: ms, timeoutMs: ms }),
  async unavailable() {
    try {
      const probe = await connectAsync(`mqtt://127.0.0.1:${MQTT_PORT}`, { reconnectPeriod: 0, connectTimeout: 2_000 });
      await probe.endAsync();
      return undefined;
    } catch (error) {
      return `no MQTT broker at 127.0.0.1:${MQTT_PORT}: ${(error as Error).message}`;
    }
  },
  sinkConfig: ({ name, tag, port }) => ({
    name,
    type: 'mqtt',
    url: `mqtt://127.0.0.1:${port}`,
    prefix: tag,
    // Unique per test, so parallel test files never take each other's session over.
    clientId: `pub-${tag}`,
    username: USERNAME,
    password: PASSWORD,
    ceUserProperties: true,
    sessionExpirySeconds: 10,
    connectTimeoutMs: 2_000,
    timeoutMs: 5_000,
  }),
  async openReader({ tag, port }): Promise<ConformanceReader> {
    // A real subscriber, QoS 1. A large Receive Maximum lets Mosquitto send without waiting for
    // each PUBACK; with its default of 20 in flight, messages pile up in Mosquitto's per-client
    // queue, which drops QoS 1 messages beyond max_queued_messages (1,000).
    const client = await connectAsync(`mqtt://127.0.0.1:${port}`, {
      reconnectPeriod: 0,
      protocolVersion: 5,
      clientId: `sub-${tag}`,
      clean: true,
      properties: { receiveMaximum: 65_535 },
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
});
