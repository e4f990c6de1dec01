import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { createSink, sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';
import { pkiUnavailable, testPki } from '../support/testPki.js';
import { makeTempDir } from '../support/tempDir.js';

/** One sink of each network type that takes TLS files, with `tls` added. */
const SINKS: Record<string, unknown>[] = [
  { type: 'webhook', url: 'https://127.0.0.1:9/hook' },
  { type: 'rabbitmq', url: 'amqps://127.0.0.1:9', exchange: { name: 'x' } },
  { type: 'nats', servers: 'nats://127.0.0.1:9', subject: 'changefeed.{type}' },
  { type: 'mqtt', url: 'mqtts://127.0.0.1:9', topic: 'changefeed/{log}' },
  { type: 'redis-streams', url: 'rediss://127.0.0.1:9' },
];

function sinkWith(sink: Record<string, unknown>, tls: Record<string, string>) {
  return () => createSink(sinkConfigSchema.parse({ name: 'dest', ...sink, ...tls }));
}

describe('TLS files of a sink, checked when the sink is made', () => {
  it.each(SINKS)('$type: a missing caFile is a ConfigError naming the sink, field and file', (sink) => {
    const missing = join(makeTempDir(), 'absent-ca.pem');
    const make = sinkWith(sink, { caFile: missing });
    expect(make).toThrow(ConfigError);
    expect(make).toThrow(`sinks "dest": caFile ${missing} cannot be read (ENOENT)`);
  });

  it.skipIf(pkiUnavailable() !== undefined).each(SINKS)(
    '$type: a caFile with no certificate, and a key of another certificate, are refused',
    (sink) => {
      const pki = testPki();
      const notPem = join(makeTempDir(), 'ca.txt');
      writeFileSync(notPem, 'not a certificate\n');
      expect(sinkWith(sink, { caFile: notPem })).toThrow(/caFile .* holds no PEM certificate/);
      const mismatched = sinkWith(sink, { certFile: pki.clientCertFile, keyFile: pki.serverKeyFile });
      expect(mismatched).toThrow(ConfigError);
      expect(mismatched).toThrow(/certFile .* and keyFile .* cannot be used together: key values mismatch/);
      expect(
        sinkWith(sink, { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile }),
      ).not.toThrow();
    },
  );
});
