import { createSecureContext } from 'node:tls';
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { PEM_FILE_MAX_BYTES, PlainFileError, readPlainFile } from './readPlainFile.js';

/**
 * The client certificate for mutual TLS, shared by every network sink: files rather than inline
 * PEM, so a Kubernetes Secret mounted as a directory can carry them. Certificate checks of the
 * server always stay on; `caFile` (declared by each sink, as its wording differs) says whom to trust.
 */
export const clientCertFields = {
  certFile: z
    .string()
    .min(1)
    .optional()
    .describe('PEM file of the client certificate (and its chain) for mutual TLS; set with `keyFile`.'),
  keyFile: z
    .string()
    .min(1)
    .optional()
    .describe('PEM file of the unencrypted private key of `certFile`, for mutual TLS.'),
};

/** For `.refine`: a client certificate needs its key and a key its certificate. */
export const certAndKeyTogether: [
  (c: { certFile?: string | undefined; keyFile?: string | undefined }) => boolean,
  { message: string; path: string[] },
] = [
  (c) => (c.certFile === undefined) === (c.keyFile === undefined),
  { message: 'set certFile and keyFile together (mutual TLS needs both)', path: ['certFile'] },
];

export interface TlsFiles {
  caFile?: string | undefined;
  certFile?: string | undefined;
  keyFile?: string | undefined;
}

/**
 * The PEM contents Node's `tls.connect` takes, read from the configured files (only those set),
 * checked the way the handshake would use them. A file that cannot be read, a `caFile` without a
 * certificate (Node ignores it silently and the handshake then fails as "unable to get local
 * issuer certificate"), or a key that does not belong to `certFile` is a ConfigError naming the
 * sink and the field. Sinks call this in their constructors, so `check` and `run` stop at start
 * instead of a connect that fails the same way on every reconnect.
 */
export function readTlsFiles(files: TlsFiles & { name?: string }): { ca?: string; cert?: string; key?: string } {
  const where = files.name === undefined ? '' : `sinks "${files.name}": `;
  const read = (field: keyof TlsFiles, file: string): string => {
    try {
      return readPlainFile(file, PEM_FILE_MAX_BYTES);
    } catch (error) {
      if (!(error instanceof PlainFileError)) throw error;
      const reason = error.brief;
      throw new ConfigError(`${where}${field} ${file} cannot be read (${reason})`, [{ path: field, message: reason }]);
    }
  };
  const pem = {
    ...(files.caFile ? { ca: read('caFile', files.caFile) } : {}),
    ...(files.certFile ? { cert: read('certFile', files.certFile) } : {}),
    ...(files.keyFile ? { key: read('keyFile', files.keyFile) } : {}),
  };
  if (pem.ca !== undefined && !pem.ca.includes('-----BEGIN CERTIFICATE-----'))
    throw new ConfigError(`${where}caFile ${files.caFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  if (pem.cert !== undefined || pem.key !== undefined) {
    try {
      createSecureContext({ cert: pem.cert, key: pem.key });
    } catch (error) {
      // `error:05800074:x509 certificate routines::key values mismatch`: the reason is the last part.
      const message = (error as Error).message.replace(/^error:[0-9A-F]+:[^:]*:[^:]*:/, '');
      throw new ConfigError(
        `${where}certFile ${files.certFile} and keyFile ${files.keyFile} cannot be used together: ${message}; ` +
          'give the PEM certificate and the unencrypted private key it was issued for',
      );
    }
  }
  return pem;
}

/** Codes of a TLS handshake the client or the server refused (an untrusted or misnamed certificate, no client certificate). */
const TLS_FAILURE = /^ERR_SSL_|^ERR_TLS_|CERT|^UNABLE_TO_|^DEPTH_ZERO|^HOSTNAME_MISMATCH/;

/** True for a TLS handshake that failed: nothing reached the server's application. */
export function isTlsFailure(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && TLS_FAILURE.test(code);
}

/** OpenSSL's reason ("tlsv13 alert certificate required") out of its long error line; other messages as they are. */
export function opensslReason(message: string): string {
  return /:SSL routines:[^:]*:([^:]+):/.exec(message)?.[1] ?? message;
}
