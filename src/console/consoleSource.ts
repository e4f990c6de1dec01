import type { ChangefeedStore } from '../store/changefeedStore.js';

/** Where a tenant runs, as this replica can tell. */
export type TenantPlacement =
  | { kind: 'here' }
  /** On a store shared by replicas: another replica holds the tenant's lease. */
  | { kind: 'held'; holder: string; live: boolean }
  /** Nobody runs it now: its lease is free, or it is stopped or starting. */
  | { kind: 'idle' }
  | { kind: 'failed'; error: string };

/** A tenant this replica knows from its config. */
export interface ConsoleTenant {
  name: string;
  /** The first characters of its API key's sha256 (`shortFingerprint`). */
  keyFingerprint: string;
  sinks: readonly { name: string; type: string }[];
}

/**
 * What the console reads, from the daemon that serves it. Everything about a tenant comes from
 * the store (shared by the replicas on PostgreSQL), so any replica shows the same; the actions
 * (retry, replay) are store writes its holder's delivery engine picks up, as the CLI's are.
 */
export interface ConsoleSource {
  tenants(): readonly ConsoleTenant[];
  placement(tenant: string): Promise<TenantPlacement>;
  /** The tenant's store, or undefined while the store is not open. The console never closes it. */
  store(tenant: string): Promise<ChangefeedStore | undefined>;
}
