import type { SinkStateStore } from '../changefeedStore.js';
import type { SinkStateRow, SinkStateUpdate } from '../storeRecords.js';
import { sinkStateFromRow, type SinkStateDbRow } from '../storedRows.js';
import type { TenantConnection } from './tenantConnection.js';

const DEACTIVATE = 'UPDATE sinks SET active = 0 WHERE tenant = ?';
const UPSERT = `INSERT INTO sinks (tenant, name, type, active, registered_at) VALUES (@tenant, @name, @type, 1, @now)
  ON CONFLICT (tenant, name) DO UPDATE SET active = 1, type = excluded.type`;
const STATE = `INSERT INTO sink_state (tenant, sink, connected, paused_until, consecutive_failures, last_error, last_error_at,
    last_delivery_at, circuit, disabled_reason)
  VALUES (@tenant, @sink, @connected, @pausedUntil, @consecutiveFailures, @lastError, @lastErrorAt, @lastDeliveryAt,
    @circuit, @disabledReason)
  ON CONFLICT (tenant, sink) DO UPDATE SET connected = excluded.connected, paused_until = excluded.paused_until,
    consecutive_failures = excluded.consecutive_failures, last_error = excluded.last_error,
    last_error_at = excluded.last_error_at, last_delivery_at = COALESCE(excluded.last_delivery_at, last_delivery_at),
    circuit = excluded.circuit, disabled_reason = excluded.disabled_reason`;
const LIST = `SELECT s.name, s.type, s.active, s.registered_at, t.connected, t.paused_until, t.consecutive_failures,
    t.last_error, t.last_error_at, t.last_delivery_at, t.circuit, t.disabled_reason
  FROM sinks s LEFT JOIN sink_state t ON t.tenant = s.tenant AND t.sink = s.name
  WHERE s.tenant = ? ORDER BY s.name`;

/**
 * Which sinks the store feeds, and their connection state. A sink seen for the first time starts
 * from "now": it receives events ingested after its registration, not the journal's history.
 */
export class SinkStates implements SinkStateStore {
  constructor(private readonly conn: TenantConnection) {}

  /** Makes exactly the configured sinks active; returns the names registered for the first time. */
  async activate(configured: readonly { name: string; type: string }[], now: number): Promise<string[]> {
    const known = new Set((await this.list()).map((s) => s.name));
    const tenant = this.conn.tenant;
    this.conn.transaction(() => {
      this.conn.statement(DEACTIVATE).run(tenant);
      for (const sink of configured)
        this.conn.statement<object>(UPSERT).run({ tenant, name: sink.name, type: sink.type, now });
    });
    return configured.map((s) => s.name).filter((name) => !known.has(name));
  }

  async recordState(state: SinkStateUpdate): Promise<void> {
    this.conn.statement<object>(STATE).run({
      circuit: 'closed',
      disabledReason: null,
      ...state,
      connected: state.connected ? 1 : 0,
      tenant: this.conn.tenant,
    });
  }

  async list(): Promise<SinkStateRow[]> {
    return this.conn.statement<[string], SinkStateDbRow>(LIST).all(this.conn.tenant).map(sinkStateFromRow);
  }
}
