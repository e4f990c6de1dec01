import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { closeAfterFile } from './closeAfterTest.js';
import { freePort } from './daemonProcess.js';
import { findBinary } from './requiredBinary.js';
import type { TestPki } from './testPki.js';

/**
 * TLS listeners on loopback for the TLS tests, each started by the test file itself on a free
 * port and stopped after it: a second redis-server, mosquitto and nats-server with certificates
 * from the file's throwaway CA, and a TLS-terminating proxy in Node for what has no TLS listener
 * here (RabbitMQ, the webhook receiver, the simulator). Every listener requires a client
 * certificate signed by that CA, so every test that delivers also proves mutual TLS.
 */
export interface TlsServer {
  readonly port: number;
  /** What the server printed so far, for a failing test's message. */
  output(): string;
  close(): Promise<void>;
}

/** Starts `binary` and resolves once its output matches `ready`; rejects with its output if it exits first. */
function spawnUntilReady(binary: string, args: string[], ready: RegExp, port: number): Promise<TlsServer> {
  const path = findBinary(binary);
  if (!path) return Promise.reject(new Error(`${binary} not installed`));
  const child: ChildProcess = spawn(path, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const server: TlsServer = {
    port,
    output: () => output,
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
  return new Promise<TlsServer>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${binary} did not say it was ready within 20 s:\n${output}`));
    }, 20_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        closeAfterFile(() => server.close());
        resolve(server);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${binary} exited (${signal ?? code}) before it was ready:\n${output}`));
    });
  });
}

const newTempDir = (prefix: string): string => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  closeAfterFile(() => {
    rmSync(dir, { recursive: true, force: true });
    return Promise.resolve();
  });
  return dir;
};

/** A second redis-server: TLS only (`--port 0`), client certificates required, nothing on disk. */
export async function startRedisTls(pki: TestPki): Promise<TlsServer> {
  const port = await freePort();
  const dir = newTempDir('changefeed-redis-tls-');
  // prettier-ignore
  const args = [
    '--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1',
    '--tls-cert-file', pki.serverCertFile, '--tls-key-file', pki.serverKeyFile,
    '--tls-ca-cert-file', pki.caFile, '--tls-auth-clients', 'yes',
    '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no',
  ];
  return spawnUntilReady('redis-server', args, /Ready to accept connections/, port);
}

/** A second mosquitto with one TLS listener that requires a client certificate. */
export async function startMosquittoTls(pki: TestPki): Promise<TlsServer> {
  const port = await freePort();
  const dir = newTempDir('changefeed-mosquitto-tls-');
  const config = join(dir, 'mosquitto.conf');
  writeFileSync(
    config,
    [
      'persistence false',
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      'log_type notice',
      'log_type information',
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      `cafile ${pki.caFile}`,
      `certfile ${pki.serverCertFile}`,
      `keyfile ${pki.serverKeyFile}`,
      'require_certificate true',
      // The conformance reader asks for a large Receive Maximum; keep QoS 1 messages queued for it.
      'max_queued_messages 100000',
      '',
    ].join('\n'),
  );
  return spawnUntilReady('mosquitto', ['-c', config], /mosquitto version \S+ running/, port);
}

/** A second nats-server with JetStream, TLS required, client certificates verified. */
export async function startNatsTls(pki: TestPki): Promise<TlsServer> {
  const port = await freePort();
  const dir = newTempDir('changefeed-nats-tls-');
  // prettier-ignore
  const args = [
    '-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir,
    '--tls', '--tlscert', pki.serverCertFile, '--tlskey', pki.serverKeyFile,
    '--tlsverify', '--tlscacert', pki.caFile,
  ];
  return spawnUntilReady('nats-server', args, /Server is ready/, port);
}

/**
 * A TLS-terminating proxy on loopback in front of a plain TCP port: it presents the PKI's server
 * certificate, requires a client certificate from the PKI's CA (unless `clientCert` is false),
 * and forwards the decrypted bytes.
 */
export async function startTlsTerminator(
  pki: TestPki,
  targetPort: number,
  { clientCert = true }: { clientCert?: boolean } = {},
): Promise<TlsServer> {
  const sockets = new Set<Socket>();
  let output = '';
  const server = createTlsServer(
    {
      cert: readFileSync(pki.serverCertFile),
      key: readFileSync(pki.serverKeyFile),
      ca: readFileSync(pki.caFile),
      requestCert: clientCert,
      rejectUnauthorized: clientCert,
    },
    (client: TLSSocket) => {
      const upstream = netConnect({ host: '127.0.0.1', port: targetPort });
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    },
  );
  server.on('tlsClientError', (error) => (output += `${error.message}\n`));
  const port = await new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
  );
  const terminator: TlsServer = {
    port,
    output: () => output,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  closeAfterFile(() => terminator.close());
  return terminator;
}
