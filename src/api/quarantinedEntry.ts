/**
 * An entry of a page that cannot become an event: no id, a non-string id, a performedAt that does
 * not parse, larger than api.maxEntryBytes. It is kept aside, not emitted, and the rest of the
 * page goes on, so one bad entry cannot stall its log.
 */
export interface QuarantinedEntry {
  /** The entry as the service sent it (JSON), cut at RAW_KEPT_BYTES. */
  raw: string;
  /** Its full size in bytes. */
  rawBytes: number;
  /** The entry's id when it has a usable one. */
  entryId: string | undefined;
  /** What is wrong with it, naming the field. */
  reason: string;
  requestId: string | undefined;
}

/** How much of a quarantined entry's JSON is kept: enough to see what it is. */
export const RAW_KEPT_BYTES = 64 * 1024;
