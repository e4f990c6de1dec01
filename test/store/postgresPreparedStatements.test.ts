import { describe, expect, it } from 'vitest';
import type { PostgresStoreBackend } from '../../src/store/postgres/postgresStoreBackend.js';
import { EXECUTE_PAUSE_MS, MAX_EXECUTE_PAUSE_MS, StatementNames } from '../../src/store/postgres/statementNames.js';
import { TenantDb } from '../../src/store/postgres/tenantDb.js';
import { admin, freshSchema, openBackend, prepare } from './postgresTestDb.js';
import { entry, ingest } from './storeContract.suite.js';

/** The statements prepared on the connection the pool hands out next (the last given back: pg-pool's idle list is LIFO). */
async function preparedOnNextConnection(backend: PostgresStoreBackend): Promise<Map<string, string>> {
  const client = await backend.gate.connect();
  try {
    const { rows } = await client.query<{ name: string; statement: string }>(
      'SELECT name, statement FROM pg_prepared_statements',
    );
    return new Map(rows.map((r) => [r.name, r.statement]));
  } finally {
    client.release();
  }
}

describe('statement names', () => {
  it('name a text by its hash, the same text always alike, and stop naming at the bound', () => {
    const names = new StatementNames(2);
    const a = names.statement('SELECT $1::int', [1]);
    expect(a.name).toMatch(/^cf_[\w-]{24}$/);
    expect(names.statement('SELECT $1::int', [2])).toEqual({ name: a.name, text: 'SELECT $1::int', values: [2] });
    expect(names.statement('SELECT $1::text', ['x']).name).toMatch(/^cf_/);
    expect(names.statement('SELECT $1::bigint', [3])).toEqual({ text: 'SELECT $1::bigint', values: [3] });
    expect(names.size).toBe(2);
    // Known texts keep their names past the bound.
    expect(names.statement('SELECT $1::int', [4]).name).toBe(a.name);
  });

  it('leave statements without parameters and several commands in one text unnamed', () => {
    const names = new StatementNames();
    expect(names.statement('COMMIT', undefined)).toEqual({ text: 'COMMIT', values: undefined });
    expect(names.statement('BEGIN; SET LOCAL statement_timeout = 5', []).name).toBeUndefined();
    expect(names.size).toBe(0);
  });
});

describe('running prepared statements by name (EXECUTE) after the server did not know one', () => {
  const MIN = EXECUTE_PAUSE_MS;
  it.each([
    { name: 'on until a name is unknown', steps: [], at: 0, executable: true },
    { name: 'off for a pause after one', steps: [0], at: MIN - 1, executable: false },
    { name: 'back after the pause (a DISCARD ALL on one connection)', steps: [0], at: MIN, executable: true },
    { name: 'one turn-off for the failures of one moment', steps: [0, 10, MIN - 1], at: MIN, executable: true },
    {
      name: 'twice as long when unknown again soon after coming back',
      steps: [0, MIN],
      at: 3 * MIN - 1,
      executable: false,
    },
    { name: '...and back after it', steps: [0, MIN], at: 3 * MIN, executable: true },
    { name: 'the first pause again when unknown long after', steps: [0, 3 * MIN], at: 4 * MIN, executable: true },
  ])('$name', ({ steps, at, executable }) => {
    let now = 0;
    const names = new StatementNames(undefined, () => now);
    for (const step of steps) {
      now = step;
      names.unknownStatement();
    }
    now = at;
    expect(names.executable).toBe(executable);
  });

  it('pauses at most an hour when every try fails (a pooler in transaction mode)', () => {
    let now = 0;
    const names = new StatementNames(undefined, () => now);
    const pauses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const since = now;
      names.unknownStatement();
      while (!names.executable) now += 1_000;
      pauses.push(now - since);
    }
    expect(pauses.slice(0, 3)).toEqual([MIN, 2 * MIN, 4 * MIN]);
    expect(pauses.at(-1)).toBe(MAX_EXECUTE_PAUSE_MS);
  });
});

describe.skipIf(!admin)('prepared statements of the PostgreSQL store', () => {
  it('are prepared once per connection: a poll done again prepares nothing more', async () => {
    const backend = await openBackend();
    const store = await backend.tenantStore('t');
    await prepare(store);
    await ingest(store, [entry('e-1')]);
    await ingest(store, []);
    const first = await preparedOnNextConnection(backend);
    expect(first.size).toBeGreaterThan(3);
    for (const [name, statement] of first) expect(backend.gate.names.statement(statement, []).name).toBe(name);

    await ingest(store, [entry('e-2')]);
    await ingest(store, []);
    expect(await preparedOnNextConnection(backend)).toEqual(first);
    expect(first.size).toBeLessThanOrEqual(backend.gate.names.size);
  });

  it('are not prepared at all with store.preparedStatements false (a pooler that cannot carry them)', async () => {
    const backend = await openBackend(freshSchema(), { preparedStatements: false });
    const store = await backend.tenantStore('t');
    await prepare(store);
    await ingest(store, [entry('e-1')]);
    expect(await store.getMeta('absent')).toBeUndefined();
    expect(await preparedOnNextConnection(backend)).toEqual(new Map());
    expect(backend.gate.names.size).toBe(0);
  });

  it('mean the same on every connection of a schema, and each schema reads its own rows', async () => {
    const one = await openBackend();
    const other = await openBackend(freshSchema());
    const a = await one.tenantStore('t');
    const b = await other.tenantStore('t');
    await a.setMeta('k', 'in one');
    await b.setMeta('k', 'in the other');
    expect(await a.getMeta('k')).toBe('in one');
    expect(await b.getMeta('k')).toBe('in the other');
  });

  it('made stale by a schema change under a running store are planned again: no read or transaction fails', async () => {
    const schema = freshSchema();
    const backend = await openBackend(schema);
    const db = new TenantDb(backend.gate, 't', backend.location, undefined, backend.activity);
    const store = await backend.tenantStore('t');
    await store.setMeta('k', 'v');
    const inTransaction = (): Promise<unknown> =>
      db.transaction(async (query) => {
        const { rows } = await query<{ v: string }>('SELECT value AS v FROM meta WHERE tenant = $1 AND key = $2', [
          't',
          'k',
        ]);
        await query("UPDATE meta SET value = value || '+' WHERE tenant = $1 AND key = $2", ['t', 'k']);
        return rows[0]?.v;
      });
    const changeType = (type: string): Promise<unknown> =>
      admin!.query(`ALTER TABLE "${schema}".meta ALTER COLUMN value TYPE ${type}`);
    // Prepared on every connection of the pool (4): reads and transactions at once.
    const everyConnection = <T>(run: () => Promise<T>): Promise<T[]> => Promise.all([run(), run(), run(), run()]);
    expect(await everyConnection(() => store.getMeta('k'))).toEqual(['v', 'v', 'v', 'v']);

    // What the statements return changes type: PostgreSQL refuses each statement prepared before.
    await changeType('varchar(1000)');
    expect(await everyConnection(() => store.getMeta('k'))).toEqual(['v', 'v', 'v', 'v']);

    await everyConnection(inTransaction);
    await changeType('text');
    await everyConnection(inTransaction);
    // Each transaction's write landed once: four before the change, four after.
    expect(await store.getMeta('k')).toBe('v++++++++');
    expect(store.health.problem).toBeUndefined();
    expect(db.health.problem).toBeUndefined();
  });
});
