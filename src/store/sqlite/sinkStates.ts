import type { SinkStateStore } from '../changefeedStore.js';
import type { SinkStateRow, SinkStateUpdate } from '../storeRecords.js';
import { sinkStateFromRow, type SinkStateDbRow } from '../storedRows.js';
import type { TenantConnection } from './tenantConnection.js';

const DEACTIVATE = 'UPDATE sinks SET active = 0 WHERE tenant = ?';
const UPSERT = `INSERT INTO sinks (tenant, name, type, active, registered_at) VALUES (@tenant, @name, @type, 1, @now)
  ON CONFLICT (tenant, name) DO UPDATE SET active = 1, type = excluded.type`;
const STATE = `INSERT INTO sink_state (tenant, sink, connected, paused_until, consecutive_failures, last_error, last_error_at,
    last_delivery_at, circuit, disabled_reason, failing_since)
  VALUES (@tenant, @sink, @connected, @pausedUntil, @consecutiveFailures, @lastError, @lastErrorAt, @lastDeliveryAt,
    @circuit, @disabledReason, @failingSince)
  ON CONFLICT (tenant, sink) DO UPDATE SET connected = excluded.connected, paused_until = excluded.paused_until,
    consecutive_failures = excluded.consecutive_failures, last_error = excluded.last_error,
    last_error_at = excluded.last_error_at, last_delivery_at = COALESCE(excluded.last_delivery_at, last_delivery_at),
    circuit = excluded.circuit, disabled_reason = excluded.disabled_reason, failing_since = excluded.failing_since
  WHERE @guarded = 0 OR sink_state.disabled_reason IS @expectedDisabledReason`;
const ENABLE = `UPDATE sink_state SET disabled_reason = NULL, failing_since = NULL, consecutive_failures = 0,
    circuit = 'closed', paused_until = 0
  WHERE tenant = ? AND sink = ?`;
const WAS_DISABLED = 'SELECT disabled_reason FROM sink_state WHERE tenant = ? AND sink = ?';
const LIST = `SELECT s.name, s.type, s.active, s.registered_at, t.connected, t.paused_until, t.consecutive_failures,
    t.last_error, t.last_error_at, t.last_delivery_at, t.circuit, t.disabled_reason, t.failing_since
  FROM sinks s LEFT JOIN sink_state t ON t.tenant = s.tenant AND t.sink = s.name
  WHERE s.tenant = ? ORDER BY s.name`;

/** Which sinks the store feeds, and their connection state. */
export class SinkStates implements SinkStateStore {
  constructor(private readonly conn: TenantConnection) {}

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

  async recordState(state: SinkStateUpdate, guard?: { disabledReason: string | null }): Promise<boolean> {
    const { changes } = this.conn.statement<object>(STATE).run({
      circuit: 'closed',
      disabledReason: null,
      failingSince: null,
      ...state,
      connected: state.connected ? 1 : 0,
      tenant: this.conn.tenant,
      guarded: guard === undefined ? 0 : 1,
      expectedDisabledReason: guard?.disabledReason ?? null,
    });
    return changes > 0;
  }

  async enable(sink: string): Promise<boolean> {
    const tenant = this.conn.tenant;
    return this.conn.transaction(() => {
      const before = this.conn
        .statement<[string, string], { disabled_reason: string | null }>(WAS_DISABLED)
        .get(tenant, sink);
      this.conn.statement<[string, string]>(ENABLE).run(tenant, sink);
      return (before?.disabled_reason ?? null) !== null;
    });
  }

  async list(): Promise<SinkStateRow[]> {
    return this.conn.statement<[string], SinkStateDbRow>(LIST).all(this.conn.tenant).map(sinkStateFromRow);
  }
}
