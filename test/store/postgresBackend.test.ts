import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { MIGRATIONS, TABLES } from '../../src/store/postgres/migrations.js';
import { BASELINE_VERSION, latestSchemaVersion, PrereleaseSchemaError } from '../../src/store/schemaVersion.js';
import { StoreError } from '../../src/store/storeError.js';
import { POSTGRES_PORT, POSTGRES_URL } from '../support/postgresAdmin.js';
import { closeAfterTest } from '../support/closeAfterTest.js';
import { until } from '../support/daemonProcess.js';
import { startTcpProxy } from '../support/tcpProxy.js';
import { admin, freshSchema, openBackend, prepare } from './postgresTestDb.js';
import { entry, ingest, T } from './contract/storeFixtures.js';
import { expectTenantsKeptApart } from './contract/tenantIsolation.js';

describe.skipIf(!admin)('the PostgreSQL store backend', () => {
  it('keeps two tenants of one schema apart', async () => {
    const backend = await openBackend();
    await expectTenantsKeptApart(await backend.tenantStore('one'), await backend.tenantStore('two'));
  });

  it('applies each migration once when several replicas start at once on a new schema', async () => {
    const schema = freshSchema();
    const backends = await Promise.all(Array.from({ length: 5 }, () => openBackend(schema)));
    const { rows } = await admin!.query<{ version: number }>(
      `SELECT version FROM "${schema}".schema_migrations ORDER BY version`,
    );
    expect(rows.map((r) => r.version)).toEqual(
      Array.from({ length: MIGRATIONS.length + 1 }, (_, i) => BASELINE_VERSION + i),
    );
    // Every replica works on the one schema.
    const stores = await Promise.all(backends.map((b) => b.tenantStore('t')));
    await Promise.all(stores.map((s, i) => s.setMeta(`replica-${i}`, 'up')));
    expect(await stores[0]!.getMeta('replica-4')).toBe('up');
  });

  it('refuses a schema of a development build before 1.0.0, naming its version and what to do', async () => {
    const schema = freshSchema();
    await admin!.query(`CREATE SCHEMA "${schema}"`);
    await admin!.query(
      `CREATE TABLE "${schema}".schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    await admin!.query(`INSERT INTO "${schema}".schema_migrations (version) SELECT generate_series(1, 6)`);
    const opening = openBackend(schema);
    await expect(opening).rejects.toThrow(PrereleaseSchemaError);
    await expect(opening).rejects.toMatchObject({ code: 'STORE_SCHEMA_PRERELEASE' });
    await expect(opening).rejects.toThrow(
      new RegExp(`schema version 6, written by a development build before 1\\.0\\.0.*DROP SCHEMA "${schema}" CASCADE`),
    );
    const { rows } = await admin!.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1`, [schema]);
    expect(rows[0]).toEqual({ n: 1 });
  });

  it('creates exactly the tables that opening an existing store checks for', async () => {
    const schema = freshSchema();
    await openBackend(schema);
    const { rows } = await admin!.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_migrations'`,
      [schema],
    );
    expect(rows.map((r) => r.name).sort()).toEqual([...TABLES].sort());
  });

  it('refuses a store at this version that lost tables, naming them, for the daemon and for readers', async () => {
    const schema = freshSchema();
    await openBackend(schema);
    await admin!.query(`DROP TABLE "${schema}".deliveries, "${schema}".changefeed_leases`);
    for (const options of [{}, { readonly: true }, { mustExist: true }]) {
      const opening = openBackend(schema, options);
      await expect(opening).rejects.toMatchObject({ code: 'STORE_ERROR' });
      await expect(opening).rejects.toThrow(
        new RegExp(
          `\\(schema ${schema}\\) records schema version ${latestSchemaVersion(MIGRATIONS.length)} but lacks ` +
            `the tables deliveries, changefeed_leases: it was damaged.*DROP SCHEMA "${schema}" CASCADE`,
        ),
      );
    }
  });

  it('refuses a version no build writes as not a store of ours or damaged, never as a development build', async () => {
    const schema = freshSchema();
    await admin!.query(`CREATE SCHEMA "${schema}"`);
    await admin!.query(
      `CREATE TABLE "${schema}".schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    await admin!.query(`INSERT INTO "${schema}".schema_migrations (version) VALUES (-3)`);
    for (const options of [{}, { readonly: true }]) {
      const opening = openBackend(schema, options);
      await expect(opening).rejects.toMatchObject({ code: 'STORE_ERROR' });
      await expect(opening).rejects.toThrow(
        /has schema version -3, which no build of changefeed writes .*not a changefeed store, or it is damaged/,
      );
    }
  });

  it('says a schema whose schema_migrations records nothing is half-created and what to do, not "has the daemon run?"', async () => {
    const schema = freshSchema();
    await admin!.query(`CREATE SCHEMA "${schema}"`);
    await admin!.query(
      `CREATE TABLE "${schema}".schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    );
    const opening = openBackend(schema, { readonly: true });
    await expect(opening).rejects.toMatchObject({ code: 'STORE_MISSING' });
    await expect(opening).rejects.toThrow(
      /is half-created: its schema_migrations table records no version\. Start the daemon/,
    );
    await expect(opening).rejects.not.toThrow(/has the daemon run/);
    // What the message promises: the daemon creates the store there.
    await openBackend(schema);
    await expect(openBackend(schema, { readonly: true })).resolves.toBeDefined();
  });

  it('says there is no store where the schema has none', async () => {
    const opening = openBackend(freshSchema(), { readonly: true });
    await expect(opening).rejects.toMatchObject({ code: 'STORE_MISSING' });
    await expect(opening).rejects.toThrow(/no store at .*has the daemon run against this store\.url\?/);
  });

  it("refuses a schema that holds another application's tables, naming them and store.schema", async () => {
    const schema = freshSchema();
    await admin!.query(`CREATE SCHEMA "${schema}"`);
    await admin!.query(`CREATE TABLE "${schema}".events (id INTEGER)`);
    await admin!.query(`CREATE TABLE "${schema}".invoices (id INTEGER)`);
    const opening = openBackend(schema);
    await expect(opening).rejects.toMatchObject({ code: 'STORE_ERROR' });
    await expect(opening).rejects.toThrow(
      new RegExp(
        `the schema ${schema} at .* holds no changefeed store but other tables \\(events, invoices\\); set store\\.schema`,
      ),
    );
    const { rows } = await admin!.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1`, [schema]);
    // Nothing of the store's was left beside them.
    expect(rows[0]).toEqual({ n: 2 });
  });

  it('refuses a schema written by a newer version, saying to upgrade', async () => {
    const schema = freshSchema();
    await openBackend(schema);
    await admin!.query(`INSERT INTO "${schema}".schema_migrations (version) VALUES ($1)`, [
      latestSchemaVersion(MIGRATIONS.length) + 1,
    ]);
    const opening = openBackend(schema);
    await expect(opening).rejects.toThrow(StoreError);
    await expect(opening).rejects.toMatchObject({ code: 'STORE_ERROR' });
    await expect(opening).rejects.toThrow(/newer than this build knows.*upgrade changefeed/);
  });

  it('refuses a URL that sets options, which would take the schema away', async () => {
    await expect(
      openBackend(freshSchema(), { url: `${POSTGRES_URL}?options=-c%20search_path%3Dpublic` }),
    ).rejects.toThrow(/sets options.*store\.schema/);
  });

  it('says which database it cannot reach, without its password, as a failure that waiting may heal', async () => {
    const proxy = await startTcpProxy(POSTGRES_PORT);
    const port = proxy.port;
    await proxy.close();
    const opening = openBackend(freshSchema(), {
      url: `postgres://postgres:S3cretPW@127.0.0.1:${port}/test`,
      connectTimeoutMs: 2_000,
    });
    await expect(opening).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    const message = ((await opening.catch((e: unknown) => e)) as Error).message;
    expect(message).toMatch(
      /^PostgreSQL at postgres:\/\/<redacted>@127\.0\.0\.1:\d+\/test \(schema cf_test_\w+\) is unreachable: .*ECONNREFUSED/,
    );
    expect(message).toMatch(/check store\.url and that the database is up$/);
    expect(message).not.toContain('S3cretPW');
  });

  it('says a database at its connection limit refuses more connections and what to raise or lower, not that it is unreachable', async () => {
    // A role allowed no connection: the server answers 53300, as when the replicas reach max_connections.
    const role = `cf_limit_${randomBytes(6).toString('hex')}`;
    await admin!.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
    try {
      const opening = openBackend(freshSchema(), { url: `postgres://${role}@127.0.0.1:${POSTGRES_PORT}/test` });
      await expect(opening).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      const message = ((await opening.catch((e: unknown) => e)) as Error).message;
      expect(message).toMatch(/\(schema cf_test_\w+\) refuses more connections: too many connections for role/);
      expect(message).toMatch(
        /raise the server's max_connections or the role's CONNECTION LIMIT, lower store\.maxConnections/,
      );
      expect(message).not.toMatch(/unreachable|check store\.url/);
    } finally {
      await admin!.query(`DROP ROLE ${role}`);
    }
  });

  it('says a database it reached but that is read-only is read-only, not unreachable, as a failure that waiting may heal', async () => {
    const role = `cf_test_ro_${randomBytes(5).toString('hex')}`;
    await admin!.query(`CREATE ROLE ${role} LOGIN`);
    closeAfterTest(async () => {
      await admin!.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
      await admin!.query(`DROP ROLE ${role}`);
    });
    // As every session of a standby after a failover, or a database set read-only for maintenance.
    await admin!.query(`ALTER ROLE ${role} SET default_transaction_read_only = on`);
    const opening = openBackend(freshSchema(), { url: `postgres://${role}@127.0.0.1:${POSTGRES_PORT}/test` });
    await expect(opening).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    // Before: "... is unreachable: cannot execute CREATE SCHEMA in a read-only transaction; check
    // store.url and that the database is up".
    expect(((await opening.catch((e: unknown) => e)) as Error).message).toMatch(
      new RegExp(
        `^PostgreSQL at postgres://<redacted>@127\\.0\\.0\\.1:${POSTGRES_PORT}/test \\(schema cf_test_\\w+\\) is read-only: ` +
          '.*read-only transaction; point store\\.url at the primary .* or lift default_transaction_read_only',
      ),
    );
  });

  it("writes the tenants' records again once a read-only database takes writes, on the connection that met the refusal too", async () => {
    const role = `cf_test_rec_${randomBytes(5).toString('hex')}`;
    await admin!.query(`CREATE ROLE ${role} LOGIN`);
    await admin!.query(`GRANT CONNECT, CREATE ON DATABASE test TO ${role}`);
    const schema = freshSchema();
    const backend = await openBackend(schema, { url: `postgres://${role}@127.0.0.1:${POSTGRES_PORT}/test` });
    closeAfterTest(async () => {
      await backend.close();
      await admin!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin!.query(`DROP OWNED BY ${role}`);
      await admin!.query(`DROP ROLE ${role}`);
    });
    const records = backend.tenantRecords();
    const put = (fileText: string) => () => ({
      result: undefined,
      changes: { put: [{ tenant: 'acme', keyFingerprint: 'f'.repeat(64), fileText }], markMissing: [], remove: [] },
    });
    await records.settle(put('one'));
    // Every new session read-only, the sessions there now ended: as for maintenance, or a standby.
    await admin!.query(`ALTER ROLE ${role} SET default_transaction_read_only = on`);
    await admin!.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
    await until(
      async () => (await records.settle(put('two')).catch((e: { code?: string }) => e.code)) === '25006',
      10_000,
      'the settlement refused as read-only',
    );
    // Writable again for every new session; the pool's sessions are not ended this time.
    await admin!.query(`ALTER ROLE ${role} RESET default_transaction_read_only`);
    // Before the fix the read-only session went back to the pool and took this settlement again.
    await records.settle(put('three'));
    expect((await records.read()).map((r) => r.fileText)).toEqual(['three']);
  });

  it('answers the dead-letter re-queue counts of all its tenants from one statement, and sees another process re-queue', async () => {
    const schema = freshSchema();
    const daemon = await openBackend(schema);
    const cli = await openBackend(schema);
    const tenants = Array.from({ length: 30 }, (_, i) => `t-${i}`);
    const stores = await Promise.all(tenants.map((t) => daemon.tenantStore(t)));
    const queries = vi.spyOn(daemon.pool, 'query');
    const counted = () => queries.mock.calls.filter(([sql]) => String(sql).includes('FROM meta WHERE key')).length;
    expect(await Promise.all(stores.map((s) => s.deadLetters.requeueCount()))).toEqual(tenants.map(() => 0));
    // One statement for the first tenant, one more for the 29 that asked while it ran.
    expect(counted()).toBeLessThanOrEqual(2);

    const elsewhere = await cli.tenantStore('t-7');
    await prepare(elsewhere);
    await ingest(elsewhere, [entry('e-1')]);
    const [seq] = (await elsewhere.outbox.pending('a', 0, 10)).map((d) => d.seq);
    await elsewhere.outbox.markDead('a', [{ seq: seq!, error: 'x' }], T);
    expect(await elsewhere.deadLetters.requeueSink('a', T)).toBe(1);
    await until(async () => (await stores[7]!.deadLetters.requeueCount()) === 1, 10_000, 't-7 seeing its re-queue');
    expect(await stores[8]!.deadLetters.requeueCount()).toBe(0);
  });

  it('refuses at once, as nothing waiting would fix, a database that does not exist', async () => {
    const opening = openBackend(freshSchema(), { url: 'postgres://postgres:S3cretPW@127.0.0.1:5432/does_not_exist' });
    await expect(opening).rejects.toMatchObject({ code: 'STORE_ERROR' });
    const message = ((await opening.catch((e: unknown) => e)) as Error).message;
    expect(message).toMatch(
      /^cannot open the store at postgres:\/\/<redacted>@127\.0\.0\.1:5432\/does_not_exist .*database "does_not_exist" does not exist; check store\.url$/,
    );
    expect(message).not.toContain('S3cretPW');
  });

  it('names store.url when it is not a URL at all, without its password', async () => {
    const opening = openBackend(freshSchema(), { url: 'postgres://postgres:S3cretPW@127.0.0.1:notaport/test' });
    await expect(opening).rejects.toMatchObject({ code: 'STORE_ERROR' });
    const message = ((await opening.catch((e: unknown) => e)) as Error).message;
    expect(message).toMatch(
      /^store\.url postgres:\/\/<redacted>@127\.0\.0\.1:notaport\/test is not a valid URL; write postgres:/,
    );
    expect(message).not.toContain('S3cretPW');
  });
});
