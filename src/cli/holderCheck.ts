import type { AppConfig } from '../config/appConfigSchema.js';
import { describeError } from '../errors.js';
import { openStoreBackend } from '../store/openStoreBackend.js';
import { OlderSchemaError } from '../store/storeError.js';
import { storeLocation } from '../store/storeLocation.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { checkFailed, type CheckResult } from './checkResult.js';
import { findTenantHolder, type TenantHolder } from './tenantHolder.js';

/**
 * On a PostgreSQL store: which replica holds the tenant now and where its feed is served, from
 * the store's lease table (docs/scaling.md, "Any replica answers for any tenant"). Nobody holding
 * it is no problem of the config (the replicas may not run yet); a store that cannot be read is.
 */
export async function checkTenantHolder(config: AppConfig, tenant: string): Promise<CheckResult | undefined> {
  if (storeLocation(config).kind !== 'postgres') return undefined;
  const name = 'lease';
  let holder: TenantHolder;
  try {
    const backend = await openStoreBackend(config, { readonly: true, mustExist: true });
    try {
      holder = await findTenantHolder(backend, tenant, config.cluster.leaseSeconds * 1000);
    } finally {
      await backend.close();
    }
  } catch (error) {
    // A store of an older schema is reachable and right: its refusal already says what to do.
    const fix =
      error instanceof OlderSchemaError
        ? 'start the daemon of this build once (it migrates the store), then run check again'
        : 'check store.url and that the database is reachable from here';
    return checkFailed(name, `cannot read who holds tenant ${tenant}: ${describeError(error)}`, fix);
  }
  return { name, ok: true, detail: describeHolder(holder, tenant, config.feed.enabled) };
}

function describeHolder(holder: TenantHolder, tenant: string, feed: boolean): string {
  if (holder.kind !== 'held') return `no replica holds tenant ${tenant} now; one takes it at its next lease round`;
  if (!holder.live)
    return `held by ${holder.holder}, which stopped heartbeating; another replica takes it when the lease expires`;
  if (holder.url === undefined)
    return `held by ${holder.holder}, which sets no cluster.advertiseUrl: other replicas answer its feed clients 503`;
  const path = tenant === DEFAULT_TENANT ? '/v1/events' : `/v1/tenants/${tenant}/events`;
  return `held by ${holder.holder} at ${holder.url}${feed ? `; its feed is served at ${holder.url}${path}` : ''}`;
}
