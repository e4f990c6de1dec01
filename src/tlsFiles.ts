import { readFileSync } from 'node:fs';
import { z } from 'zod';

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

/** The PEM contents Node's `tls.connect` takes, read from the configured files (only those set). */
export function readTlsFiles(files: TlsFiles): { ca?: string; cert?: string; key?: string } {
  return {
    ...(files.caFile ? { ca: readFileSync(files.caFile, 'utf8') } : {}),
    ...(files.certFile ? { cert: readFileSync(files.certFile, 'utf8') } : {}),
    ...(files.keyFile ? { key: readFileSync(files.keyFile, 'utf8') } : {}),
  };
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
