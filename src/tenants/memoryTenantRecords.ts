import { compareNames } from './tenantDirectory.js';
import type { TenantRecord, TenantRecordChanges, TenantRecords } from './tenant.js';

/**
 * Tenant records kept in this process only: for a store that has none of its own, and for tests.
 * A process settles one read at a time (the watcher's loop), so nothing needs serialising.
 */
export class MemoryTenantRecords implements TenantRecords {
  private readonly records = new Map<string, TenantRecord>();

  read(): Promise<readonly TenantRecord[]> {
    return Promise.resolve([...this.records.values()].sort((a, b) => compareNames(a.tenant, b.tenant)));
  }

  async settle<T>(
    decide: (records: readonly TenantRecord[]) => { result: T; changes: TenantRecordChanges },
  ): Promise<T> {
    const { result, changes } = decide(await this.read());
    for (const tenant of changes.remove) this.records.delete(tenant);
    for (const record of changes.put) this.records.set(record.tenant, record);
    return result;
  }
}
