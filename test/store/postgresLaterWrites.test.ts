import { describe, expect, it } from 'vitest';
import { PoolGate } from '../../src/store/postgres/poolGate.js';
import { EXECUTE_PAUSE_MS, StatementNames } from '../../src/store/postgres/statementNames.js';
import { TenantDb } from '../../src/store/postgres/tenantDb.js';
import { admin, openBackend } from './postgresTestDb.js';

const INSERT = `INSERT INTO meta (tenant, key, value)
  SELECT $1, u.key, COALESCE(u.value, '(null)') || ':' || $4::float8::text FROM unnest($2::text[], $3::text[]) AS u (key, value)`;
const DIVIDE = 'SELECT 1 / $1::int';

/** Values a poll's writes carry: quotes, backslashes, braces, commas, NULL, and text that looks like SQL. */
const WEIRD = ["o'hara", 'a\\b', 'say "hi"', '{x,y}', "'); DROP TABLE meta; --", 'tab\there', 'é ✓', null];

describe.skipIf(!admin)("a transaction's writes sent with its next round trip (Query.later)", () => {
  async function tenantDb() {
    const backend = await openBackend();
    // One connection: the second transaction finds the first one's statements prepared on it.
    await backend.pool.query('SELECT 1');
    const db = new TenantDb(backend.gate, 't', backend.location, undefined, backend.activity);
    const cost = async (work: () => Promise<unknown>) => {
      const before = backend.activity.statements;
      await work();
      return backend.activity.statements - before;
    };
    return { backend, db, cost };
  }

  const insertAll = (db: TenantDb, prefix: string) =>
    db.transaction((query) => {
      query.later(INSERT, ['t', WEIRD.map((_, i) => `${prefix}${i}`), WEIRD, 1.25]);
      query.later(DIVIDE, [1]);
      return Promise.resolve();
    });

  it('writes the values as bound, each alone on a connection that has not prepared them, then with COMMIT', async () => {
    const { backend, db, cost } = await tenantDb();
    // BEGIN, each write alone (prepared there), COMMIT; then BEGIN, and the writes with COMMIT.
    expect(await cost(() => insertAll(db, 'first-'))).toBe(4);
    expect(await cost(() => insertAll(db, 'then-'))).toBe(2);
    const { rows } = await backend.pool.query<{ key: string; value: string }>(
      "SELECT key, value FROM meta WHERE tenant = 't' ORDER BY key",
    );
    const expected = (prefix: string) =>
      WEIRD.map((value, i) => ({ key: `${prefix}${i}`, value: `${value ?? '(null)'}:1.25` }));
    expect(rows).toEqual([...expected('first-'), ...expected('then-')]);
  });

  it('fails the transaction when a write sent with COMMIT fails, and keeps none of its writes', async () => {
    const { backend, db, cost } = await tenantDb();
    await insertAll(db, 'first-');
    const failing = () =>
      db.transaction((query) => {
        query.later(INSERT, ['t', ['kept-not'], ['v'], 1]);
        query.later(DIVIDE, [0]);
        return Promise.resolve();
      });
    await expect(failing()).rejects.toMatchObject({ code: '22012' });
    const { rows } = await backend.pool.query("SELECT key FROM meta WHERE tenant = 't' AND key = 'kept-not'");
    expect(rows).toEqual([]);
    // The connection is whole: the next transaction commits, at the cost of one prepared.
    expect(await cost(() => insertAll(db, 'after-'))).toBe(2);
  });

  it('stops running statements by name in a simple query once the server does not know one (a pooler renames them)', async () => {
    const { backend, db, cost } = await tenantDb();
    await insertAll(db, 'first-');
    // The server forgets what the connection prepared, as a pooler's server connection never knew it.
    await backend.pool.query('DEALLOCATE ALL');
    expect(backend.gate.names.executable).toBe(true);
    await insertAll(db, 'then-');
    expect(backend.gate.names.executable).toBe(false);
    const { rows } = await backend.pool.query(
      "SELECT count(*)::int AS n FROM meta WHERE tenant = 't' AND key LIKE 'then-%'",
    );
    expect(rows).toEqual([{ n: WEIRD.length }]);
    // Each statement goes alone from now on, by the protocol's Bind: BEGIN, two writes, COMMIT.
    expect(await cost(() => insertAll(db, 'after-'))).toBe(4);
  });

  it('runs statements by name again once the pause after an unknown one is over (a DISCARD ALL, not a pooler)', async () => {
    const backend = await openBackend();
    let now = 0;
    const gate = new PoolGate(
      backend.pool,
      1,
      10_000,
      backend.activity,
      backend.location,
      new StatementNames(undefined, () => now),
    );
    const db = new TenantDb(gate, 't', backend.location, undefined, backend.activity);
    const cost = async (work: () => Promise<unknown>) => {
      const before = backend.activity.statements;
      await work();
      return backend.activity.statements - before;
    };
    await insertAll(db, 'first-');
    await backend.pool.query('DISCARD ALL');
    await insertAll(db, 'then-');
    expect(gate.names.executable).toBe(false);
    expect(await cost(() => insertAll(db, 'off-'))).toBe(4);
    now = EXECUTE_PAUSE_MS;
    // The writes prepared on the new connection while off: BEGIN, and the writes with COMMIT.
    expect(await cost(() => insertAll(db, 'back-'))).toBe(2);
    expect(gate.names.executable).toBe(true);
  });

  it('sends the writes before the statement that follows them, in order, and gives that its result', async () => {
    const { db } = await tenantDb();
    const read = () =>
      db.transaction(async (query) => {
        query.later(INSERT, ['t', ['k'], ['v'], 2]);
        const { rows } = await query<{ value: string }>('SELECT value FROM meta WHERE tenant = $1 AND key = $2', [
          't',
          'k',
        ]);
        query.later('DELETE FROM meta WHERE tenant = $1 AND key = $2', ['t', 'k']);
        return rows[0]?.value;
      });
    expect(await read()).toBe('v:2');
    expect(await read()).toBe('v:2');
  });
});
