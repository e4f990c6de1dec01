import { describe, expect, it } from 'vitest';
import { isConnectionFailure } from '../../src/store/postgres/connectionFailure.js';
import { globToLike } from '../../src/store/postgres/globPattern.js';
import { isStorageError, StoreHealth, StoreUnavailableError } from '../../src/store/storeHealth.js';

const withCode = (code: string, message = `failed with ${code}`) => Object.assign(new Error(message), { code });

describe('isStorageError', () => {
  it.each([
    ['SQLITE_FULL'],
    ['SQLITE_IOERR_WRITE'],
    ['SQLITE_READONLY'],
    ['ENOSPC'],
    ['EROFS'],
    ['08006'],
    ['08001'],
    ['57P01'],
    ['57P03'],
    ['57014'],
    ['53100'],
    ['53300'],
    ['58030'],
    ['25006'],
  ])('takes %s for a store that cannot be written now', (code) => {
    expect(isStorageError(withCode(code))).toBe(true);
  });

  // A socket error could as well be a sink's: only the PostgreSQL store reads it as its own (below).
  it.each([['23505'], ['42P01'], ['22P02'], ['40001'], ['SQLITE_CONSTRAINT'], ['LEASE_LOST'], ['ECONNREFUSED']])(
    'takes %s for an error of the statement or the caller, not of the store',
    (code) => {
      expect(isStorageError(withCode(code))).toBe(false);
    },
  );
});

describe('isConnectionFailure', () => {
  it('knows a refused, reset or timed-out socket and the connection errors node-postgres reports without a code', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND'])
      expect(isConnectionFailure(withCode(code))).toBe(true);
    for (const message of [
      'Connection terminated unexpectedly',
      'Connection terminated due to connection timeout',
      'timeout exceeded when trying to connect',
      'Query read timeout',
    ])
      expect(isConnectionFailure(new Error(message))).toBe(true);
  });

  it('leaves errors the server answered with, and others, alone', () => {
    for (const code of ['57P01', '23505', 'SQLITE_FULL']) expect(isConnectionFailure(withCode(code))).toBe(false);
    expect(isConnectionFailure(new Error('cannot build'))).toBe(false);
    expect(isConnectionFailure('Connection terminated')).toBe(false);
  });
});

describe('StoreHealth', () => {
  const at = 'postgres://<redacted>@db:5432/feed';

  it('names the database, not a disk, for PostgreSQL errors', () => {
    const health = new StoreHealth();
    const cases: [Error, RegExp][] = [
      [withCode('08006', 'connection failure'), /^the database .* cannot be reached \(connection failure/],
      [withCode('53100', 'could not extend file'), /^the database .* is out of disk space/],
      [withCode('25006', 'cannot execute UPDATE in a read-only transaction'), /^the database .* is read-only/],
      [withCode('57014', 'canceling statement due to statement timeout'), /^the database .* did not answer in time/],
      [withCode('57P01', 'terminating connection due to administrator command'), /cannot be reached/],
      [
        withCode('53300', 'sorry, too many clients already'),
        /^the database .* refuses more connections \(sorry, too many clients already\); polling and delivery pause until it takes one; .*raise the server's max_connections/,
      ],
    ];
    for (const [error, expected] of cases) {
      expect(health.record(error, at)).toBe(true);
      expect(health.problem).toMatch(expected);
      expect(health.problem).toContain(at);
      expect(health.problem).not.toMatch(/disk holding/);
    }
  });

  it('still speaks of the disk for SQLite', () => {
    const health = new StoreHealth();
    health.record(withCode('SQLITE_FULL', 'database or disk is full'), '/state/changefeed.sqlite');
    expect(health.problem).toMatch(/^the disk holding \/state\/changefeed.sqlite is full/);
  });

  it('keeps the message of a StoreUnavailableError as it is, and records nothing for other errors', () => {
    const health = new StoreHealth();
    expect(health.record(new StoreUnavailableError('the database x cannot be reached (y); z'), at)).toBe(true);
    expect(health.problem).toBe('the database x cannot be reached (y); z');
    expect(health.record(withCode('23505'), at)).toBe(false);
    expect(health.problem).toBe('the database x cannot be reached (y); z');
    health.clear();
    expect(health.problem).toBeUndefined();
  });
});

describe('globToLike', () => {
  it.each([
    ['com.test.*', 'com.test.%'],
    ['*.level?added', '%.level_added'],
    ['a_b%c', 'a\\_b\\%c'],
    ['back\\slash*', 'back\\\\slash%'],
    ['[x]', '[x]'],
    ['', ''],
  ])('reads %s as the LIKE pattern %s', (glob, like) => {
    expect(globToLike(glob)).toBe(like);
  });
});
