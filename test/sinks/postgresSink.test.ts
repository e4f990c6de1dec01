import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { buildCloudEvent, eventsConfigSchema } from '../../src/events/cloudEvent.js';
import type { LogKind } from '../../src/logs.js';
import { PostgresSink } from '../../src/sinks/postgresSink.js';
import { postgresSinkConfigSchema } from '../../src/sinks/postgresSinkConfig.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';
import { SinkPartialFailureError, SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { connectPostgres, dropSchema, POSTGRES_URL } from '../support/postgresAdmin.js';
import { rejection } from '../support/rejection.js';
import { makeTempDir } from '../support/tempDir.js';

let admin: pg.Client | undefined;
let skipReason: string | undefined;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  const connected = await connectPostgres();
  if ('client' in connected) {
    admin = connected.client;
    return;
  }
  skipReason = connected.reason;
  if (process.env.CI) throw new Error(`${skipReason} (CI is set: database tests must not be skipped)`);
  console.warn(`skipping postgres sink tests: ${skipReason}`);
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await admin?.end();
});

let counter = 0;
const never = new AbortController().signal;
const eventsConfig = eventsConfigSchema.parse({});

function event(
  n: number,
  options: { log?: LogKind; objectId?: string; description?: string; tenant?: string; seq?: number } = {},
): OutboundEvent {
  const tenant = options.tenant ?? 'default';
  const log = options.log ?? 'career';
  const objectId = log === 'identity_provider' ? '' : (options.objectId ?? 'car_1');
  const entry = {
    id: `act_${n}`,
    event: 'level_added',
    description: options.description ?? `Level ${n}`,
    performedAt: `2026-01-01T00:00:${String(n % 60).padStart(2, '0')}Z`,
    relatedLevelId: `lvl_${n}`,
  };
  const ce = buildCloudEvent({ tenant, log, objectId, entry, baseUrl: 'https://skills.example' }, eventsConfig);
  return {
    seq: options.seq ?? n,
    tenant,
    id: ce.id,
    type: ce.type,
    log,
    objectId,
    orderingKey: `${log}:${objectId}`,
    json: JSON.stringify(ce),
    attempt: 1,
  };
}

/** A sink writing to `table` in a schema of its own (or `schema`), dropped after the test. */
function sinkFor(table: string, extra: Record<string, unknown> = {}, schema = newSchema()) {
  const sink = new PostgresSink(
    postgresSinkConfigSchema.parse({
      name: 'pg',
      type: 'postgres',
      url: POSTGRES_URL,
      table: `${schema}.${table}`,
      ...extra,
    }),
  );
  cleanups.push(() => sink.close());
  return { sink, qualified: `"${schema}"."${table}"`, schema };
}

function newSchema(): string {
  const schema = `pgsink${process.pid}x${Date.now().toString(36)}x${counter++}`;
  cleanups.push(() => dropSchema(admin!, schema));
  return schema;
}

async function indexesOf(schema: string): Promise<string[]> {
  const { rows } = await admin!.query<{ indexname: string }>(
    'SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname',
    [schema],
  );
  return rows.map((r) => r.indexname);
}

/** A table made by hand with every column the sink writes but no indexes, keyed on `key` (none: ''). */
async function createTableByHand(schema: string, table: string, key = 'PRIMARY KEY (tenant, id)'): Promise<string> {
  const qualified = `"${schema}"."${table}"`;
  await admin!.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await admin!.query(`CREATE TABLE ${qualified} (
    id text NOT NULL, tenant text NOT NULL, sequence bigint, type text NOT NULL, source text NOT NULL,
    subject text, time timestamptz, log text NOT NULL, object_id text NOT NULL, data jsonb NOT NULL,
    event jsonb NOT NULL, ingested_at timestamptz NOT NULL DEFAULT now()${key ? `, ${key}` : ''})`);
  return qualified;
}

describe('postgres sink', () => {
  it('lands one row per event with the listed columns, and a re-sent batch changes nothing', async (ctx) => {
    if (skipReason) return ctx.skip();
    const { sink, qualified } = sinkFor('Events');
    await sink.connect(never);
    const batch = [event(1), event(2), event(3, { log: 'identity_provider' })];
    await sink.write(batch, never);
    await sink.write(batch, never);
    const { rows } = await admin!.query<Record<string, unknown>>(
      `SELECT id, tenant, sequence, type, source, subject, time, log, object_id, data, event, ingested_at
       FROM ${qualified} ORDER BY id`,
    );
    expect(rows).toHaveLength(3);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const career = byId.get(batch[0]!.id)!;
    expect(career).toMatchObject({
      tenant: 'default',
      sequence: '1',
      type: 'com.skills.changefeed.career.level_added',
      source: 'https://skills.example/api/v1/careers/car_1/activity',
      subject: 'car_1',
      log: 'career',
      object_id: 'car_1',
      data: { id: 'act_1', event: 'level_added', description: 'Level 1', relatedLevelId: 'lvl_1' },
      event: JSON.parse(batch[0]!.json) as unknown,
    });
    expect((career.time as Date).toISOString()).toBe('2026-01-01T00:00:01.000Z');
    expect(career.ingested_at).toBeInstanceOf(Date);
    expect(byId.get(batch[2]!.id)).toMatchObject({ subject: null, log: 'identity_provider', object_id: '' });
    expect(await indexesOf(qualified.split('.')[0]!.replace(/"/g, ''))).toEqual([
      'Events_by_object_time',
      'Events_by_tenant_sequence',
      'Events_by_type_time',
      'Events_pkey',
    ]);
  });

  it('keeps the events of two tenants sharing a table apart, even with the same event id', async (ctx) => {
    if (skipReason) return ctx.skip();
    const schema = newSchema();
    const acme = sinkFor('changefeed_events', {}, schema);
    const globex = sinkFor('changefeed_events', {}, schema);
    await acme.sink.connect(never);
    await globex.sink.connect(never);
    // The identity-provider log has one source for every company: only the tenant tells them apart.
    await acme.sink.write([event(1, { log: 'identity_provider', tenant: 'acme', seq: 7 })], never);
    await globex.sink.write([event(1, { log: 'identity_provider', tenant: 'globex', seq: 3 })], never);
    await globex.sink.write([event(1, { log: 'identity_provider', tenant: 'globex', seq: 3 })], never);
    const { rows } = await admin!.query<{
      tenant: string;
      sequence: string;
      source: string;
      event: { tenant: string };
    }>(`SELECT tenant, sequence, source, event FROM ${acme.qualified} ORDER BY tenant`);
    expect(rows.map((r) => [r.tenant, r.sequence, r.event.tenant])).toEqual([
      ['acme', '7', 'acme'],
      ['globex', '3', 'globex'],
    ]);
    expect(new Set(rows.map((r) => r.source)).size).toBe(1);
  });

  it("gives up indexing a table in use after a bounded lock wait, not queueing the table's writers behind it", async (ctx) => {
    if (skipReason) return ctx.skip();
    const schema = newSchema();
    const qualified = await createTableByHand(schema, 'changefeed_events');
    const writer = await connectPostgres();
    if (!('client' in writer)) throw new Error(writer.reason);
    cleanups.push(() => writer.client.end());
    // An open write holds the table: CREATE INDEX must wait for it, and would make every later write wait too.
    await writer.client.query('BEGIN');
    await writer.client.query(`DELETE FROM ${qualified}`);
    // timeoutMs far beyond the test's: only the lock wait can end the connect in time.
    const { sink } = sinkFor('changefeed_events', { timeoutMs: 300_000 }, schema);
    const { error } = await rejection(sink.connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/lock timeout.*the table is in use/);
    await writer.client.query('COMMIT');
    await sink.connect(never);
    expect(await indexesOf(schema)).toEqual([
      'changefeed_events_by_object_time',
      'changefeed_events_by_tenant_sequence',
      'changefeed_events_by_type_time',
      'changefeed_events_pkey',
    ]);
  });

  it('names the column a table made by hand lacks, whatever createTable says', async (ctx) => {
    if (skipReason) return ctx.skip();
    const schema = newSchema();
    const qualified = await createTableByHand(schema, 'changefeed_events');
    await admin!.query(`ALTER TABLE ${qualified} DROP COLUMN sequence`);
    for (const createTable of [false, true]) {
      const { sink } = sinkFor('changefeed_events', { createTable }, schema);
      const { error } = await rejection(sink.connect(never));
      expect(error).toBeInstanceOf(SinkUnavailableError);
      expect(error.message).toContain('column "sequence" does not exist');
      expect(error.message).toContain('the table lacks a column the sink writes');
    }
    await admin!.query(`ALTER TABLE ${qualified} ADD COLUMN sequence bigint`);
    const { sink } = sinkFor('changefeed_events', { createTable: false }, schema);
    await sink.connect(never);
    await sink.write([event(1, { tenant: 'acme' })], never);
  });

  it('refuses a table created by hand without a key on (tenant, id): a re-sent batch would land twice', async (ctx) => {
    if (skipReason) return ctx.skip();
    const schema = newSchema();
    const qualified = await createTableByHand(schema, 'events', '');
    // A unique index on something else is no key of an event.
    await admin!.query(`CREATE UNIQUE INDEX ON ${qualified} (tenant, id, ingested_at)`);
    for (const createTable of [false, true]) {
      const { sink } = sinkFor('events', { createTable }, schema);
      const { error } = await rejection(sink.connect(never));
      expect(error).toBeInstanceOf(SinkUnavailableError);
      expect(error.message).toContain(`table ${qualified} has no primary key or unique index on (tenant, id)`);
      expect(error.message).toContain(`CREATE UNIQUE INDEX ON ${qualified} (tenant, id)`);
    }
    await admin!.query(`CREATE UNIQUE INDEX ON ${qualified} (tenant, id)`);
    const { sink } = sinkFor('events', { createTable: false }, schema);
    await sink.connect(never);
    await sink.write([event(1, { tenant: 'acme' })], never);
    await sink.write([event(1, { tenant: 'acme' })], never);
    const { rows } = await admin!.query<{ n: string }>(`SELECT count(*) AS n FROM ${qualified}`);
    expect(rows[0]?.n).toBe('1');
  });

  // A table keyed on id alone (made before tenant existed) is refused with the advice to add a
  // unique index on (tenant, id); followed, the table had both keys, and the insert's ON CONFLICT
  // DO NOTHING dropped a second tenant's event with an id the first had used, as if re-sent.
  it("refuses a table that also has a unique key without tenant: a second tenant's event with a used id would vanish", async (ctx) => {
    if (skipReason) return ctx.skip();
    const schema = newSchema();
    const qualified = await createTableByHand(schema, 'events', 'PRIMARY KEY (id)');
    await admin!.query(`CREATE UNIQUE INDEX ON ${qualified} (tenant, id)`);
    const { sink } = sinkFor('events', { createTable: false }, schema);
    const { error } = await rejection(sink.connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toContain(`table ${qualified} has a unique key without tenant (events_pkey)`);
  });

  it('gives two long table names of one schema indexes of their own', async (ctx) => {
    if (skipReason) return ctx.skip();
    const schema = newSchema();
    // 60 characters in common: cut to 63 bytes with a suffix, both names would be the same.
    const common = `events_of_the_warehouse_for_the_analytics_team_of_the_group_`;
    for (const table of [`${common}a`, `${common}b`]) {
      const { sink } = sinkFor(table, {}, schema);
      await sink.connect(never);
    }
    const { rows } = await admin!.query<{ tablename: string; n: string }>(
      'SELECT tablename, count(*) AS n FROM pg_indexes WHERE schemaname = $1 GROUP BY tablename ORDER BY tablename',
      [schema],
    );
    expect(rows).toEqual([
      { tablename: `${common}a`, n: '4' },
      { tablename: `${common}b`, n: '4' },
    ]);
    for (const name of await indexesOf(schema)) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63);
  });

  it('rejects for good only the event PostgreSQL cannot store, commits the rest and holds back that object', async (ctx) => {
    if (skipReason) return ctx.skip();
    const { sink, qualified } = sinkFor('changefeed_events');
    await sink.connect(never);
    // jsonb cannot hold \u0000: no retry will ever store this event.
    const poison = event(2, { description: 'nul \u0000 here' });
    const batch = [event(1), poison, event(3), event(4, { objectId: 'car_2' })];
    const { error } = await rejection(sink.write(batch, never));
    expect(error).toBeInstanceOf(SinkPartialFailureError);
    const failures = (error as SinkPartialFailureError).failures;
    expect([...failures.keys()]).toEqual([poison.id]);
    expect(failures.get(poison.id)).toMatchObject({ permanent: true });
    const { rows } = await admin!.query<{ id: string }>(`SELECT id FROM ${qualified} ORDER BY id`);
    // event 3 follows the poison event on car_1: held back, sent again by the engine after it.
    expect(rows.map((r) => r.id).sort()).toEqual([batch[0]!.id, batch[3]!.id].sort());
  });

  it('sets aside an event too large for an index row (SQLSTATE 54000) and commits the rest', async (ctx) => {
    if (skipReason) return ctx.skip();
    const { sink, qualified } = sinkFor('changefeed_events');
    await sink.connect(never);
    // The service chose the event name: 3 kB that do not compress overflow the (type, time) index row.
    const hugeType = `com.skills.changefeed.career.${randomBytes(3_000).toString('base64')}`;
    const plain = event(2, { objectId: 'car_2' });
    const huge = {
      ...plain,
      type: hugeType,
      json: JSON.stringify({ ...(JSON.parse(plain.json) as object), type: hugeType }),
    };
    const batch = [event(1), huge, event(3)];
    const { error } = await rejection(sink.write(batch, never));
    expect(error).toBeInstanceOf(SinkPartialFailureError);
    const failures = (error as SinkPartialFailureError).failures;
    expect([...failures.keys()]).toEqual([huge.id]);
    expect(failures.get(huge.id)).toMatchObject({ permanent: true });
    expect(failures.get(huge.id)?.error).toMatch(/^54000 index row size/);
    const { rows } = await admin!.query<{ id: string }>(`SELECT id FROM ${qualified} ORDER BY id`);
    expect(rows.map((r) => r.id).sort()).toEqual([batch[0]!.id, batch[2]!.id].sort());
  });

  it('reports a missing table as unavailable with what to do when createTable is off', async (ctx) => {
    if (skipReason) return ctx.skip();
    const { sink } = sinkFor('absent', { createTable: false });
    const { error } = await rejection(sink.connect(never));
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.message).toMatch(/does not exist; the table is missing: create it or set createTable: true/);
  });

  it('keeps the password out of errors, from the URL or from passwordFile', async (ctx) => {
    if (skipReason) return ctx.skip();
    const file = join(makeTempDir(), 'pg-password');
    writeFileSync(file, 'file-pass-Wq81\n');
    for (const config of [
      { url: 'postgres://bob:url-pass-Xz93@127.0.0.1:1/test' },
      { url: 'postgres://bob@127.0.0.1:1/test', passwordFile: file },
    ]) {
      const sink = new PostgresSink(
        postgresSinkConfigSchema.parse({ name: 'pg', type: 'postgres', connectTimeoutMs: 500, ...config }),
      );
      const { error } = await rejection(sink.connect(never));
      expect(error).toBeInstanceOf(SinkUnavailableError);
      expect(error.message).toContain('127.0.0.1:1/test');
      expect(error.message).not.toMatch(/url-pass|file-pass/);
      await sink.close();
    }
  });

  it('refuses at start a TLS file named in the url that cannot be read, naming the parameter', () => {
    const missing = join(makeTempDir(), 'root.crt');
    for (const parameter of ['sslrootcert', 'sslcert', 'sslkey']) {
      const make = () =>
        new PostgresSink(
          postgresSinkConfigSchema.parse({
            name: 'pg',
            type: 'postgres',
            url: `${POSTGRES_URL}?sslmode=verify-full&${parameter}=${missing}`,
          }),
        );
      expect(make).toThrow(ConfigError);
      expect(make).toThrow(`sinks "pg": ${parameter}=${missing} in url cannot be read (ENOENT)`);
    }
  });

  it('refuses a table name that is not an identifier, and a password given twice', () => {
    const base = { name: 'pg', type: 'postgres', url: POSTGRES_URL };
    expect(postgresSinkConfigSchema.safeParse({ ...base, table: 'x; DROP TABLE y' }).success).toBe(false);
    expect(postgresSinkConfigSchema.safeParse({ ...base, table: 'a.b.c' }).success).toBe(false);
    expect(
      postgresSinkConfigSchema.safeParse({ ...base, url: 'postgres://u:p@h/db', passwordFile: '/run/secrets/pg' })
        .success,
    ).toBe(false);
  });
});
