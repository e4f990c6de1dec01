import { describe, expect, it } from 'vitest';
import { ChangefeedError } from '../../src/errors.js';
import { isRetryableOpenError } from '../../src/store/postgres/openFailure.js';
import { StoreError } from '../../src/store/storeError.js';
import { StoreUnavailableError } from '../../src/store/storeHealth.js';

/** An error as node-postgres raises it: a socket error (errno code) or a server's (SQLSTATE). */
function driverError(message: string, code?: string): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

describe('which failures to open the PostgreSQL store a daemon waits out', () => {
  const cases: [string, unknown, boolean][] = [
    ['connection refused', driverError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'), true],
    ['connection reset', driverError('read ECONNRESET', 'ECONNRESET'), true],
    ['connect timed out (socket)', driverError('connect ETIMEDOUT 10.0.0.9:5432', 'ETIMEDOUT'), true],
    ['connect timed out (node-postgres)', driverError('timeout exceeded when trying to connect'), true],
    ['connection cut', driverError('Connection terminated unexpectedly'), true],
    ['host unreachable', driverError('connect EHOSTUNREACH', 'EHOSTUNREACH'), true],
    ['name not found (a Service not created yet)', driverError('getaddrinfo ENOTFOUND db', 'ENOTFOUND'), true],
    ['DNS not answering', driverError('getaddrinfo EAI_AGAIN db', 'EAI_AGAIN'), true],
    ['the database system is starting up', driverError('the database system is starting up', '57P03'), true],
    ['the database system is shutting down', driverError('terminating connection', '57P01'), true],
    ['too many connections', driverError('sorry, too many clients already', '53300'), true],
    ['out of disk', driverError('could not extend file', '53100'), true],
    ['a read-only standby after a failover', driverError('read-only transaction', '25006'), true],
    ['connection exception class 08', driverError('connection failure', '08006'), true],
    ['already phrased as unavailable', new StoreUnavailableError('down'), true],
    ['password rejected', driverError('password authentication failed for user "cf"', '28P01'), false],
    ['role or host not allowed', driverError('role "nobody" does not exist', '28000'), false],
    ['database does not exist', driverError('database "does_not_exist" does not exist', '3D000'), false],
    ['missing privilege (CREATE SCHEMA)', driverError('permission denied for database test', '42501'), false],
    ['a schema newer than this build', new StoreError('schema version 9, newer than this build'), false],
    ['an invalid schema name', new StoreError('store.schema "X" is not a lower-case SQL identifier'), false],
    ['a malformed URL', Object.assign(new TypeError('Invalid URL'), { code: 'ERR_INVALID_URL' }), false],
    ['TLS refused by the server', driverError('The server does not support SSL connections'), false],
    ['a certificate not trusted', driverError('self-signed certificate', 'SELF_SIGNED_CERT_IN_CHAIN'), false],
    ['a usage error of ours', new ChangefeedError('USAGE', 'no'), false],
    ['a syntax error in a migration', driverError('syntax error at or near "X"', '42601'), false],
    ['not an error at all', 'ECONNREFUSED', false],
    ['nothing', undefined, false],
  ];
  it.each(cases)('%s: retry %s', (_name, error, retryable) => {
    expect(isRetryableOpenError(error)).toBe(retryable);
  });
});
