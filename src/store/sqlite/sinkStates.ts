import type { SinkStateStore } from '../changefeedStore.js';
import type { CircuitState, SinkStateRow, SinkStateUpdate } from '../storeRecords.js';
import type { Db } from './database.js';

/**
 * Which sinks the store feeds, and their connection state. A sink seen for the first time starts
 * from "now": it receives events ingested after its registration, not the journal's history.
 */
export class SinkStates implements SinkStateStore {
  private readonly deactivateStmt;
  private readonly upsertStmt;
  private readonly stateStmt;
  private readonly listStmt;

  constructor(private readonly db: Db) {
    this.deactivateStmt = db.prepare('UPDATE sinks SET active = 0');
    this.upsertStmt = db.prepare(
      `INSERT INTO sinks (name, type, active, registered_at) VALUES (@name, @type, 1, @now)
       ON CONFLICT (name) DO UPDATE SET active = 1, type = excluded.type`,
    );
    this.stateStmt = db.prepare(
      `INSERT INTO sink_state (sink, connected, paused_until, consecutive_failures, last_error, last_error_at, last_delivery_at, circuit, disabled_reason)
       VALUES (@sink, @connected, @pausedUntil, @consecutiveFailures, @lastError, @lastErrorAt, @lastDeliveryAt, @circuit, @disabledReason)
       ON CONFLICT (sink) DO UPDATE SET connected = excluded.connected, paused_until = excluded.paused_until,
         consecutive_failures = excluded.consecutive_failures, last_error = excluded.last_error,
         last_error_at = excluded.last_error_at, last_delivery_at = COALESCE(excluded.last_delivery_at, last_delivery_at),
         circuit = excluded.circuit, disabled_reason = excluded.disabled_reason`,
    );
    this.listStmt = db.prepare<
      [],
      {
        name: string;
        type: string;
        active: number;
        registered_at: number;
        connected: number | null;
        paused_until: number | null;
        consecutive_failures: number | null;
        last_error: string | null;
        last_error_at: number | null;
        last_delivery_at: number | null;
        circuit: CircuitState | null;
        disabled_reason: string | null;
      }
    >(
      `SELECT s.name, s.type, s.active, s.registered_at, t.connected, t.paused_until, t.consecutive_failures,
              t.last_error, t.last_error_at, t.last_delivery_at, t.circuit, t.disabled_reason
       FROM sinks s LEFT JOIN sink_state t ON t.sink = s.name ORDER BY s.name`,
    );
  }

  /** Makes exactly the configured sinks active; returns the names registered for the first time. */
  async activate(configured: readonly { name: string; type: string }[], now: number): Promise<string[]> {
    const known = new Set((await this.list()).map((s) => s.name));
    this.db.transaction(() => {
      this.deactivateStmt.run();
      for (const sink of configured) this.upsertStmt.run({ name: sink.name, type: sink.type, now });
    })();
    return configured.map((s) => s.name).filter((name) => !known.has(name));
  }

  async recordState(state: SinkStateUpdate): Promise<void> {
    this.stateStmt.run({ circuit: 'closed', disabledReason: null, ...state, connected: state.connected ? 1 : 0 });
  }

  async list(): Promise<SinkStateRow[]> {
    return this.listStmt.all().map((r) => ({
      name: r.name,
      type: r.type,
      active: r.active === 1,
      registeredAt: r.registered_at,
      connected: r.connected === 1,
      pausedUntil: r.paused_until ?? 0,
      consecutiveFailures: r.consecutive_failures ?? 0,
      lastError: r.last_error,
      lastErrorAt: r.last_error_at,
      lastDeliveryAt: r.last_delivery_at,
      circuit: r.circuit ?? 'closed',
      disabledReason: r.disabled_reason,
    }));
  }
}
