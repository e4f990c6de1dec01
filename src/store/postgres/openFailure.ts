import { ChangefeedError } from '../../errors.js';
import { isStorageError } from '../storeHealth.js';
import { isConnectionFailure } from './connectionFailure.js';

/**
 * Whether a failure to open the PostgreSQL store may heal by waiting, so a daemon retries rather
 * than exits: the server refused, reset or timed out the connection, its name did not resolve
 * (DNS of a Service not created yet), or it answered that it cannot serve now (starting up or
 * shutting down 57P03/57P01, too many connections 53300, out of disk, a read-only standby after a
 * failover; the SQLSTATEs isStorageError knows). Everything else will not heal by waiting and
 * fails at once: bad credentials (28P01, 28000), a database that does not exist (3D000), missing
 * privileges (42501), TLS refused, a malformed URL, and our own refusals (StoreError: a
 * schema newer than this build, an invalid schema name, `options` in the URL). An error nobody
 * recognises fails too: an operator reads it at once, rather than a retry loop hiding it.
 */
export function isRetryableOpenError(error: unknown): boolean {
  // Ours (STORE_ERROR) were phrased to name the setting to fix; none is fixed by waiting.
  if (error instanceof ChangefeedError) return error.code === 'STORE_UNAVAILABLE';
  return isConnectionFailure(error) || isStorageError(error);
}
