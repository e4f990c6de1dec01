import { jetstream, jetstreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { missingBinary } from '../../support/requiredBinary.js';
import { pkiUnavailable, testPki, type TestPki } from '../../support/testPki.js';
import { startNatsTls } from '../../support/tlsServers.js';
import type { ConformanceReader, ConformanceTarget, ReadMessage } from '../conformance.js';

/** The machine's NATS with JetStream; with `tls`, a second nats-server of the test's own, TLS only. */
const PLAIN_PORT = 4222;

/** Each test tag gets its own stream `CF_<tag>` on subjects `<tag>.>`; the reader creates it, exactly as the sink would. */
const streamOf = (tag: string) => ({ name: `CF_${tag}`, subjects: [`${tag}.>`] });

/** The conformance target of the nats sink, over plain TCP or, with `tls`, over mutual TLS. */
export function natsTarget(options: { tls?: boolean } = {}): ConformanceTarget {
  const readers = new Map<string, ConformanceReader>();
  let pki: TestPki | undefined;
  const url = (): string => `nats://127.0.0.1:${target.brokerPort}`;
  const tls = (): Record<string, unknown> =>
    pki
      ? {
          ca: readFileSync(pki.caFile, 'utf8'),
          cert: readFileSync(pki.clientCertFile, 'utf8'),
          key: readFileSync(pki.clientKeyFile, 'utf8'),
          // nats.js checks a server given by address against `localhost` (see natsSink.ts).
          checkServerIdentity: (_name: string, cert: PeerCertificate) => checkServerIdentity('127.0.0.1', cert),
        }
      : {};
  const direct = (): Promise<NatsConnection> =>
    connect({ servers: url(), reconnect: false, timeout: 2_000, ...(pki ? { tls: tls() } : {}) });

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

  const target: ConformanceTarget = {
    type: 'nats',
    label: options.tls ? 'nats over TLS (client certificate)' : undefined,
    // With TLS, the port of the listener `unavailable` starts.
    brokerPort: options.tls ? 0 : PLAIN_PORT,
    connectionOriented: true,
    tenantHeader: 'ce-tenant',
    cases: { readBack: true, orderedReadBack: true, dropConnections: true, downAtStart: true },
    // One setting bounds connecting and each publish acknowledgement.
    timeouts: (ms) => ({ timeoutMs: ms }),
    async unavailable() {
      if (options.tls) {
        const missing = pkiUnavailable() ?? missingBinary('nats-server');
        if (missing) return missing;
        pki = testPki();
        target.brokerPort = (await startNatsTls(pki)).port;
      }
      let nc: NatsConnection;
      try {
        nc = await direct();
      } catch (error) {
        return `no NATS server at ${url()}: ${(error as Error).message}`;
      }
      try {
        await jetstreamManager(nc);
        return undefined;
      } catch (error) {
        return `NATS at ${url()} has JetStream off (start it with -js): ${(error as Error).message}`;
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
      ceHeaders: true,
      stream: { ...streamOf(tag), create: true },
      ...(pki ? { tls: true, caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile } : {}),
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
  };
  return target;
}
