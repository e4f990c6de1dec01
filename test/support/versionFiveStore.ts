import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';

export const V5_T = Date.UTC(2026, 4, 1, 12, 0, 0);

/**
 * A store as builds before migration 6 wrote it (one tenant, no tenant column), with rows in
 * every table: events 1 and 2 kept (1 delivered to sink a, 2 pending), event 3 pruned, so its
 * AUTOINCREMENT counter (3) is above the highest seq left.
 */
export function writeVersionFiveStore(file: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  for (const sql of MIGRATIONS.slice(0, 5)) db.exec(sql);
  db.pragma('user_version = 5');
  const T = V5_T;
  db.prepare("INSERT INTO sinks VALUES ('a', 'file', 1, ?)").run(T);
  db.prepare("INSERT INTO sink_state (sink, connected, circuit) VALUES ('a', 1, 'closed')").run();
  db.prepare(
    "INSERT INTO watched_logs (log, object_id, origin, coverage_start, window_end, created_at) VALUES ('career', 'c-1', 'config', ?, ?, ?)",
  ).run(T, T + 5, T);
  for (const id of ['e-1', 'e-2', 'e-3']) {
    db.prepare("INSERT INTO seen_entries VALUES ('career', 'c-1', ?, ?, ?)").run(id, T, T);
    const seq = db
      .prepare(
        "INSERT INTO events (event_id, log, object_id, type, performed_at, ingested_at, payload) VALUES (?, 'career', 'c-1', 't', ?, ?, ?)",
      )
      .run(`ev-${id}`, T, T, JSON.stringify({ id: `ev-${id}`, entryid: id })).lastInsertRowid;
    db.prepare("INSERT INTO deliveries (sink, seq, state) VALUES ('a', ?, 'pending')").run(seq);
  }
  db.prepare("UPDATE deliveries SET state = 'delivered' WHERE seq = 1").run();
  db.prepare('DELETE FROM deliveries WHERE seq = 3').run();
  db.prepare('DELETE FROM events WHERE seq = 3').run();
  db.prepare("INSERT INTO meta VALUES ('journal.prunedThroughSeq', '3')").run();
  db.prepare("INSERT INTO rate_estimates (log, object_id, events, hours) VALUES ('career', 'c-1', 2, 1)").run();
  db.prepare("INSERT INTO quarantine VALUES ('career', 'c-1', 'fp', NULL, 'no id', '{}', 2, NULL, ?)").run(T);
  db.close();
}
