import { connect, type ChannelModel } from 'amqplib';
import { afterAll } from 'vitest';
import { pkiUnavailable, testPki, type TestPki } from '../../support/testPki.js';
import { startTlsTerminator } from '../../support/tlsServers.js';
import type { ConformanceReader, ConformanceTarget, ReadMessage } from '../conformance.js';

/** The machine's RabbitMQ; the suite puts a TCP proxy in front of it for the sink, the reader connects directly. */
const BROKER_PORT = 5672;

const exchangeOf = (tag: string): string => `cf.${tag}`;

/**
 * The conformance target of the rabbitmq sink, over plain TCP or, with `tls`, over mutual TLS
 * (amqps://) through a TLS-terminating proxy in front of the same broker: enabling a TLS
 * listener would mean reconfiguring and restarting the machine's RabbitMQ.
 */
export function rabbitmqTarget(options: { tls?: boolean } = {}): ConformanceTarget {
  /** One connection for every reader and cleanup of the file; each reader gets its own channel. */
  let admin: ChannelModel | undefined;
  let pki: TestPki | undefined;
  afterAll(async () => {
    await admin?.close().catch(() => undefined);
  });

  async function adminConnection(): Promise<ChannelModel> {
    if (!admin) {
      admin = await connect(
        { protocol: 'amqp', hostname: '127.0.0.1', port: BROKER_PORT, username: 'guest', password: 'guest' },
        { timeout: 2_000 },
      );
      admin.on('error', () => undefined);
    }
    return admin;
  }

  const target: ConformanceTarget = {
    type: 'rabbitmq',
    label: options.tls ? 'rabbitmq over TLS (amqps://, client certificate)' : undefined,
    // With TLS, the port of the TLS proxy `unavailable` starts.
    brokerPort: options.tls ? 0 : BROKER_PORT,
    connectionOriented: true,
    secrets: ['guest'],
    tenantHeader: 'cloudEvents:tenant',
    cases: { readBack: true, orderedReadBack: true, dropConnections: true, downAtStart: true },
    timeouts: (ms) => ({ connectTimeoutMs: ms, confirmTimeoutMs: ms }),
    async unavailable() {
      try {
        await adminConnection();
      } catch (error) {
        return `no RabbitMQ at 127.0.0.1:${BROKER_PORT} (${(error as Error).message})`;
      }
      if (options.tls) {
        const missing = pkiUnavailable();
        if (missing) return missing;
        pki = testPki();
        target.brokerPort = (await startTlsTerminator(pki, BROKER_PORT)).port;
      }
      return undefined;
    },
    sinkConfig: ({ name, tag, port }) => ({
      name,
      type: 'rabbitmq',
      url: `${pki ? 'amqps' : 'amqp'}://127.0.0.1:${port}`,
      username: 'guest',
      password: 'guest',
      exchange: { name: exchangeOf(tag), type: 'topic', declare: true },
      ceHeaders: true,
      connectTimeoutMs: 2_000,
      confirmTimeoutMs: 5_000,
      ...(pki ? { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile } : {}),
    }),
    async openReader({ tag }): Promise<ConformanceReader> {
      const channel = await (await adminConnection()).createChannel();
      channel.on('error', () => undefined);
      // Declared here too (same settings as the sink's, so both declarations agree): the queue must
      // be bound before the first event is published, and the sink only connects later.
      await channel.assertExchange(exchangeOf(tag), 'topic', { durable: true });
      const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
      await channel.bindQueue(queue, exchangeOf(tag), '#');
      const messages: ReadMessage[] = [];
      const seen = new Set<string>();
      await channel.consume(
        queue,
        (message) => {
          // Deduplicates on messageId as a real consumer does: a batch cut off by a dropped
          // connection is sent again whole, and the suite's waitFor counts messages, not ids.
          if (!message || seen.has(String(message.properties.messageId))) return;
          seen.add(String(message.properties.messageId));
          const headers = Object.fromEntries(
            Object.entries((message.properties.headers ?? {}) as Record<string, unknown>).map(([k, v]) => [
              k,
              String(v),
            ]),
          );
          messages.push({ id: String(message.properties.messageId), body: message.content.toString('utf8'), headers });
        },
        { noAck: true },
      );
      return {
        async waitFor(count, timeoutMs) {
          const until = Date.now() + timeoutMs;
          while (messages.length < count && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
          return [...messages];
        },
        // Closing the channel cancels the consumer, which deletes the auto-delete queue.
        close: () => channel.close().catch(() => undefined),
      };
    },
    async cleanup(tag) {
      const channel = await (await adminConnection()).createChannel();
      channel.on('error', () => undefined);
      await channel.deleteExchange(exchangeOf(tag)).catch(() => undefined);
      await channel.close().catch(() => undefined);
    },
  };
  return target;
}
