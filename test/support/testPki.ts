import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeAfterFile } from './closeAfterTest.js';
import { missingBinary } from './requiredBinary.js';

/**
 * A throwaway certificate authority made with `openssl` for one test file: the CA, a server
 * certificate for 127.0.0.1 only (so `localhost` is a wrong host name), a client certificate for
 * mutual TLS, and an unrelated CA that signed nothing the servers present (a wrong CA).
 * Paths, not contents: the sinks and brokers take files.
 */
export interface TestPki {
  dir: string;
  caFile: string;
  /** A CA that did not sign the server certificate. */
  otherCaFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
}

let made: TestPki | undefined;

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** P-256 keys: quick to make, and every broker here takes them. */
const NEW_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function makeCa(dir: string, name: string, subject: string): void {
  openssl(dir, [
    'req',
    '-x509',
    ...NEW_KEY,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-subj',
    subject,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

function makeLeaf(dir: string, name: string, subject: string, extensions: string[]): void {
  writeFileSync(join(dir, `${name}.ext`), `${extensions.join('\n')}\n`);
  openssl(dir, ['req', '-new', ...NEW_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject]);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
  ]);
}

/** Why no PKI can be made here (openssl missing), or undefined. */
export const pkiUnavailable = (): string | undefined => missingBinary('openssl');

/** The file's PKI, made on first use (about 0.1 s). */
export function testPki(): TestPki {
  if (made) return made;
  const dir = mkdtempSync(join(tmpdir(), 'changefeed-pki-'));
  makeCa(dir, 'ca', '/CN=changefeed test CA');
  makeCa(dir, 'other-ca', '/CN=changefeed unrelated CA');
  makeLeaf(dir, 'server', '/CN=127.0.0.1', [
    'subjectAltName=IP:127.0.0.1',
    'basicConstraints=CA:FALSE',
    'extendedKeyUsage=serverAuth',
  ]);
  makeLeaf(dir, 'client', '/CN=changefeed', ['basicConstraints=CA:FALSE', 'extendedKeyUsage=clientAuth']);
  // Brokers started as root may drop to their own user (Mosquitto does): let them read the files.
  chmodSync(dir, 0o755);
  for (const file of readdirSync(dir)) chmodSync(join(dir, file), 0o644);
  closeAfterFile(() => {
    if (!process.env.KEEP_TEMP) rmSync(dir, { recursive: true, force: true });
    made = undefined;
    return Promise.resolve();
  });
  made = {
    dir,
    caFile: join(dir, 'ca.pem'),
    otherCaFile: join(dir, 'other-ca.pem'),
    serverCertFile: join(dir, 'server.pem'),
    serverKeyFile: join(dir, 'server.key'),
    clientCertFile: join(dir, 'client.pem'),
    clientKeyFile: join(dir, 'client.key'),
  };
  return made;
}
