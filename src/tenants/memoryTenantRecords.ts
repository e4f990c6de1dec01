import { compareNames } from './tenantDirectory.js';
import type { TenantRecord, TenantRecordChanges, TenantRecords } from './tenant.js';

/**
 * Tenant records kept in this process only: for a store that has none of its own, and for tests.
 * A process settles one read at a time (the watcher's loop), so nothing needs serialising. How
 * long a file has been missing is measured on the monotonic clock, as nothing outlives the process.
 */
export class MemoryTenantRecords implements TenantRecords {
  private readonly records = new Map<string, TenantRecord>();
  /** Tenant -> performance.now() at the first read that missed its file. */
  private readonly missingSince = new Map<string, number>();

  read(): Promise<readonly TenantRecord[]> {
    const now = performance.now();
    const records = [...this.records.values()].map((record) => {
      const since = this.missingSince.get(record.tenant);
      return since === undefined ? record : { ...record, missingForMs: now - since };
    });
    return Promise.resolve(records.sort((a, b) => compareNames(a.tenant, b.tenant)));
  }

  async settle<T>(
    decide: (records: readonly TenantRecord[]) => { result: T; changes: TenantRecordChanges },
  ): Promise<T> {
    const { result, changes } = decide(await this.read());
    for (const tenant of changes.remove) {
      this.records.delete(tenant);
      this.missingSince.delete(tenant);
    }
    for (const record of changes.put) {
      this.records.set(record.tenant, {
        tenant: record.tenant,
        keyFingerprint: record.keyFingerprint,
        fileText: record.fileText,
      });
      this.missingSince.delete(record.tenant);
    }
    const now = performance.now();
    for (const tenant of changes.markMissing)
      if (this.records.has(tenant) && !this.missingSince.has(tenant)) this.missingSince.set(tenant, now);
    return result;
  }
}
