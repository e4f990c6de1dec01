/**
 * Migration 6 (see migrations.ts): every table rebuilt with `tenant` leading its key, the rows
 * there were becoming the tenant `default`. SQLite cannot change a primary key in place, so each
 * table is created anew, filled and swapped in (https://sqlite.org/lang_altertable.html, "other
 * kinds of table schema changes"); database.ts turns foreign keys off around it, as that recipe
 * asks, and checks them before the transaction commits.
 */

/** A table of migration 5 rebuilt: its new definition, and the columns copied unchanged. */
interface Rebuild {
  table: string;
  create: string;
  columns: readonly string[];
  indexes?: readonly string[];
}

const REBUILDS: readonly Rebuild[] = [
  {
    table: 'watched_logs',
    create: `tenant TEXT NOT NULL, log TEXT NOT NULL, object_id TEXT NOT NULL, origin TEXT NOT NULL,
      status TEXT NOT NULL DEFAULT 'active', status_reason TEXT, coverage_start INTEGER, window_end INTEGER,
      sort_order TEXT, last_poll_at INTEGER, last_success_at INTEGER, last_error TEXT,
      consecutive_failures INTEGER NOT NULL DEFAULT 0, next_poll_at INTEGER NOT NULL DEFAULT 0,
      entries_ingested INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
      PRIMARY KEY (tenant, log, object_id)`,
    columns: [
      'log',
      'object_id',
      'origin',
      'status',
      'status_reason',
      'coverage_start',
      'window_end',
      'sort_order',
      'last_poll_at',
      'last_success_at',
      'last_error',
      'consecutive_failures',
      'next_poll_at',
      'entries_ingested',
      'created_at',
    ],
  },
  {
    table: 'seen_entries',
    create: `tenant TEXT NOT NULL, log TEXT NOT NULL, object_id TEXT NOT NULL, entry_id TEXT NOT NULL,
      performed_at INTEGER, seen_at INTEGER NOT NULL, PRIMARY KEY (tenant, log, object_id, entry_id)`,
    columns: ['log', 'object_id', 'entry_id', 'performed_at', 'seen_at'],
  },
  {
    // A rowid table still: payloads are too large for WITHOUT ROWID to pay off.
    table: 'events',
    create: `tenant TEXT NOT NULL, seq INTEGER NOT NULL, event_id TEXT NOT NULL, log TEXT NOT NULL,
      object_id TEXT NOT NULL, type TEXT NOT NULL, performed_at INTEGER, ingested_at INTEGER NOT NULL,
      payload TEXT NOT NULL, PRIMARY KEY (tenant, seq), UNIQUE (tenant, event_id)`,
    columns: ['seq', 'event_id', 'log', 'object_id', 'type', 'performed_at', 'ingested_at', 'payload'],
    indexes: ['CREATE INDEX events_by_ingested_at ON events (tenant, ingested_at)'],
  },
  {
    table: 'sinks',
    create: `tenant TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, active INTEGER NOT NULL,
      registered_at INTEGER NOT NULL, PRIMARY KEY (tenant, name)`,
    columns: ['name', 'type', 'active', 'registered_at'],
  },
  {
    table: 'deliveries',
    create: `tenant TEXT NOT NULL, sink TEXT NOT NULL, seq INTEGER NOT NULL, state TEXT NOT NULL DEFAULT 'pending',
      attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL DEFAULT 0, first_attempt_at INTEGER,
      last_error TEXT, updated_at INTEGER, last_status INTEGER, last_response TEXT,
      PRIMARY KEY (tenant, sink, seq), FOREIGN KEY (tenant, seq) REFERENCES events (tenant, seq) ON DELETE CASCADE`,
    columns: [
      'sink',
      'seq',
      'state',
      'attempts',
      'next_attempt_at',
      'first_attempt_at',
      'last_error',
      'updated_at',
      'last_status',
      'last_response',
    ],
    indexes: [
      'CREATE INDEX deliveries_by_state ON deliveries (tenant, sink, state, seq)',
      'CREATE INDEX deliveries_by_seq ON deliveries (tenant, seq)',
      "CREATE INDEX deliveries_dead ON deliveries (tenant, sink) WHERE state = 'dead'",
    ],
  },
  {
    table: 'sink_state',
    create: `tenant TEXT NOT NULL, sink TEXT NOT NULL, connected INTEGER NOT NULL DEFAULT 0,
      paused_until INTEGER NOT NULL DEFAULT 0, consecutive_failures INTEGER NOT NULL DEFAULT 0, last_error TEXT,
      last_error_at INTEGER, last_delivery_at INTEGER, circuit TEXT NOT NULL DEFAULT 'closed', disabled_reason TEXT,
      PRIMARY KEY (tenant, sink)`,
    columns: [
      'sink',
      'connected',
      'paused_until',
      'consecutive_failures',
      'last_error',
      'last_error_at',
      'last_delivery_at',
      'circuit',
      'disabled_reason',
    ],
  },
  {
    table: 'meta',
    create: 'tenant TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tenant, key)',
    columns: ['key', 'value'],
  },
  {
    table: 'rate_estimates',
    create: `tenant TEXT NOT NULL, log TEXT NOT NULL, object_id TEXT NOT NULL, events REAL NOT NULL DEFAULT 0,
      hours REAL NOT NULL DEFAULT 0, updated_at INTEGER, poll_cost REAL NOT NULL DEFAULT 1, planned_rate REAL,
      next_poll_at INTEGER, sessions REAL NOT NULL DEFAULT 0, last_event_at INTEGER,
      PRIMARY KEY (tenant, log, object_id)`,
    columns: [
      'log',
      'object_id',
      'events',
      'hours',
      'updated_at',
      'poll_cost',
      'planned_rate',
      'next_poll_at',
      'sessions',
      'last_event_at',
    ],
  },
  {
    table: 'quarantine',
    create: `tenant TEXT NOT NULL, log TEXT NOT NULL, object_id TEXT NOT NULL, fingerprint TEXT NOT NULL,
      entry_id TEXT, reason TEXT NOT NULL, raw TEXT NOT NULL, raw_bytes INTEGER NOT NULL, request_id TEXT,
      first_seen_at INTEGER NOT NULL, PRIMARY KEY (tenant, log, object_id, fingerprint)`,
    columns: [
      'log',
      'object_id',
      'fingerprint',
      'entry_id',
      'reason',
      'raw',
      'raw_bytes',
      'request_id',
      'first_seen_at',
    ],
    indexes: ['CREATE INDEX quarantine_by_first_seen ON quarantine (tenant, first_seen_at)'],
  },
];

function rebuild({ table, create, columns, indexes = [] }: Rebuild): string {
  const rowid = table === 'events' ? '' : ' WITHOUT ROWID';
  return [
    `CREATE TABLE ${table}_v6 (${create})${rowid};`,
    `INSERT INTO ${table}_v6 (tenant, ${columns.join(', ')}) SELECT 'default', ${columns.join(', ')} FROM ${table};`,
    `DROP TABLE ${table};`,
    `ALTER TABLE ${table}_v6 RENAME TO ${table};`,
    ...indexes.map((index) => `${index};`),
  ].join('\n');
}

export const TENANT_KEYS_MIGRATION = `
  CREATE TABLE journal_heads (tenant TEXT PRIMARY KEY, head INTEGER NOT NULL) WITHOUT ROWID;
  -- The AUTOINCREMENT counter, or the highest seq when the counter's row is missing (SQLite then
  -- numbered from there too): a head below a kept seq would fail every ingest.
  INSERT INTO journal_heads (tenant, head)
    SELECT 'default', head FROM (SELECT MAX(
      COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0),
      COALESCE((SELECT MAX(seq) FROM events), 0)) AS head)
    WHERE head > 0;
  ${REBUILDS.map(rebuild).join('\n')}
  DELETE FROM sqlite_sequence WHERE name = 'events';
`;
