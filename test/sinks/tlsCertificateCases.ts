/**
 * What every network sink must do over TLS besides delivering (which the conformance suite
 * checks through a TLS listener): refuse a server it cannot trust, with an error that names the
 * certificate problem, and present its client certificate where the server asks for one. The
 * target's TLS listener is the one its conformance suite uses (certificates from test/support/testPki.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { SinkEndpointFailingError, SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { createSink, sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';
import { testPki } from '../support/testPki.js';
import { rejection } from '../support/rejection.js';
import { conformanceEvent, type ConformanceTarget } from './conformance.js';

/** Node's words for a chain that does not lead to a trusted CA. */
const UNTRUSTED =
  /unable to get local issuer certificate|unable to verify the first certificate|self[- ]signed certificate/i;
/** Node's words for a certificate issued for another name. */
const WRONG_NAME = /does not match certificate's altnames|ERR_TLS_CERT_ALTNAME_INVALID/i;

/** Makes `target.unavailable` start its listener once, for the conformance suite and these cases alike. */
export function startOnce(target: ConformanceTarget): ConformanceTarget {
  const unavailable = target.unavailable.bind(target);
  let started: Promise<string | undefined> | undefined;
  target.unavailable = () => (started ??= unavailable());
  return target;
}

export function runCertificateCases(target: ConformanceTarget): void {
  const label = target.label ?? target.type;
  // A webhook endpoint that refuses the handshake is failing as a whole (its give-up rule runs);
  // a broker that does is reconnected.
  const refused = target.type === 'webhook' ? SinkEndpointFailingError : SinkUnavailableError;
  describe(`${label}: certificate problems`, () => {
    let skipReason: string | undefined;
    beforeAll(async () => {
      skipReason = await target.unavailable();
      if (skipReason && process.env.CI)
        throw new Error(`${label}: ${skipReason} (CI is set: TLS tests must not be skipped)`);
      if (skipReason) console.warn(`skipping ${label} certificate cases: ${skipReason}`);
    });

    /** Connects a sink straight to the TLS listener (no proxy) and writes one event; the error, if any. */
    const attempt = async (change: (raw: Record<string, unknown>) => Record<string, unknown>): Promise<Error> => {
      const tag = `tls${process.pid}x${Date.now().toString(36)}`;
      const raw = change(target.sinkConfig({ name: 'tls', tag, port: target.brokerPort! }));
      const sink = createSink(sinkConfigSchema.parse(raw), target.sinkContext);
      try {
        let { error } = await rejection(sink.connect(new AbortController().signal));
        // A sink that connected must still fail its first write.
        if (error.message === 'expected a rejection')
          error = (await rejection(sink.write([conformanceEvent()], new AbortController().signal))).error;
        console.info(`${label}: ${error.message}`);
        return error;
      } finally {
        await sink.close();
        if (target.cleanup) await target.cleanup(tag);
      }
    };

    it('refuses a server whose certificate a different CA signed, and says so', async (ctx) => {
      if (skipReason) return ctx.skip();
      const error = await attempt((raw) => ({ ...raw, caFile: testPki().otherCaFile }));
      expect(error).toBeInstanceOf(refused);
      expect(error.message).toMatch(UNTRUSTED);
    });

    it('refuses a certificate issued for another host name, and says so', async (ctx) => {
      if (skipReason) return ctx.skip();
      // The server certificate names 127.0.0.1 only; `localhost` reaches the same listener.
      const error = await attempt(
        (raw) => JSON.parse(JSON.stringify(raw).replaceAll('127.0.0.1', 'localhost')) as Record<string, unknown>,
      );
      expect(error).toBeInstanceOf(refused);
      expect(error.message).toMatch(WRONG_NAME);
    });

    it('is turned away without a client certificate, which it otherwise presents (mutual TLS)', async (ctx) => {
      if (skipReason) return ctx.skip();
      const error = await attempt(({ certFile: _cert, keyFile: _key, ...raw }) => raw);
      const failures = (error as { failures?: Map<string, unknown> }).failures;
      expect(error, `${error.message} ${JSON.stringify([...(failures ?? new Map()).values()])}`).toBeInstanceOf(
        refused,
      );
    });
  });
}
