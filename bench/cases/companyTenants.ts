import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeTenantFile } from '../../test/support/tenantFile.js';

/** The tenant of the simulator's company `company` (its file name in `tenants/`). */
export const tenantName = (company: number): string => `company-${String(company).padStart(4, '0')}`;
export const companyOf = (tenant: string): number => Number(tenant.slice('company-'.length));

/**
 * `<dir>/tenants` with one tenant file per company key, each tenant delivering to a file sink of
 * its own in `<dir>/events`; returns the tenants directory.
 */
export function writeCompanyTenants(dir: string, keys: readonly string[]): string {
  const tenantsDir = join(dir, 'tenants');
  mkdirSync(tenantsDir);
  mkdirSync(join(dir, 'events'));
  keys.forEach((key, i) => {
    const name = tenantName(i);
    writeTenantFile(tenantsDir, name, { apiKey: key, sinkPath: join(dir, 'events', `${name}.jsonl`) });
  });
  return tenantsDir;
}
