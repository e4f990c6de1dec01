import { jetstream, jetstreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { runSinkConformance, type ConformanceReader, type ReadMessage } from './conformance.js';

const NATS_PORT = 4222;
const NATS_URL = `nats://127.0.0.1:${NATS_PORT}`;

/** Each test tag gets its own stream `CF_<tag>` on subjects `<tag>.>`; the reader creates it, exactly as the sink would. */
const streamOf = (tag: string) => ({ name: `CF_${tag}`, subjects: [`${tag}.>`] });
const readers = new Map<string, ConformanceReader>();

const direct = (): Promise<NatsConnection> => connect({ servers: NATS_URL, reconnect: false, timeout: 2_000 });

/** A real JetStream consumer (ordered, from the start of the stream) on the broker's own port. */
async function openStreamReader(tag: string): Promise<ConformanceReader> {
  const nc = await direct();
  const { name, subjects } = streamOf(tag);
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name, subjects });
  const messages: ReadMessage[] = [];
  const consumer = await jetstream(nc).consumers.get(name);
  const consuming: ConsumerMessages = await consumer.consume({
    callback: (m) => {
      const headers = Object.fromEntries(m.headers ? [...m.headers.keys()].map((k) => [k, m.headers!.get(k)]) : []);
      messages.push({ id: m.headers?.get('Nats-Msg-Id') ?? '', body: m.string(), headers });
    },
  });
  let closed = false;
  return {
    async waitFor(count, timeoutMs) {
      const until = Date.now() + timeoutMs;
      while (messages.length < count && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      return [...messages];
    },
    async close() {
      if (closed) return;
      closed = true;
      await consuming.close();
      await nc.close();
    },
  };
}

runSinkConformance({
  type: 'nats',
  brokerPort: NATS_PORT,
  connectionOriented: true,
  cases: { readBack: true, orderedReadBack: true, dropConnections: true, downAtStart: true },
  // One setting bounds connecting and each publish acknowledgement.
  timeouts: (ms) => ({ timeoutMs: ms }),
  async unavailable() {
    let nc: NatsConnection;
    try {
      nc = await direct();
    } catch (error) {
      return `no NATS server at ${NATS_URL}: ${(error as Error).message}`;
    }
    try {
      await jetstreamManager(nc);
      return undefined;
    } catch (error) {
      return `NATS at ${NATS_URL} has JetStream off (start it with -js): ${(error as Error).message}`;
    } finally {
      await nc.close();
    }
  },
  sinkConfig: ({ name, tag, port }) => ({
    name,
    type: 'nats',
    servers: [`nats://127.0.0.1:${port}`],
    subject: `${tag}.{type}`,
    timeoutMs: 2_000,
    stream: { ...streamOf(tag), create: true },
  }),
  async openReader({ tag }) {
    const reader = await openStreamReader(tag);
    readers.set(tag, reader);
    return reader;
  },
  async cleanup(tag) {
    // The suite removes the destination before it closes the reader: stop the reader first, so
    // its ordered consumer does not go looking for a deleted stream.
    await readers.get(tag)?.close();
    readers.delete(tag);
    const nc = await direct();
    try {
      await (await jetstreamManager(nc)).streams.delete(`CF_${tag}`);
    } catch (error) {
      if (!/stream not found/.test((error as Error).message)) throw error;
    } finally {
      await nc.close();
    }
  },
});
