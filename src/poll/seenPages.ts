import { createHash } from 'node:crypto';

/** A page's entry ids in their order as one short key: the same page gives the same key. */
function pageKey(entryIds: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify(entryIds)).digest('base64');
}

/** One read of a version log, asking the store only about pages its last committed read did not see. */
export interface SeenPagesRead {
  /** Which of a page's ids were ingested before: all of them for a page already read, else the store's answer. */
  seenAmong: (entryIds: readonly string[]) => Promise<ReadonlySet<string>>;
  /** The read's ingest committed: each id of its pages is now recorded as seen. */
  committed: () => void;
}

/**
 * The pages each version log held at its last committed read, one hash per page. Most polls of a
 * skill find its first page unchanged; every id on such a page was recorded as seen by that
 * read's ingest, and seen ids of a version log are never pruned, so the answer needs no store
 * read (on PostgreSQL a transaction per poll). A page that changed is asked of the store, and the
 * ingest's own dedup check stands behind both answers.
 */
export class SeenPages {
  private readonly pagesByLog = new Map<string, ReadonlySet<string>>();

  read(logKey: string, ask: (entryIds: readonly string[]) => Promise<ReadonlySet<string>>): SeenPagesRead {
    const known = this.pagesByLog.get(logKey);
    const pages = new Set<string>();
    return {
      seenAmong: (entryIds) => {
        const key = pageKey(entryIds);
        pages.add(key);
        return known?.has(key) ? Promise.resolve(new Set(entryIds)) : ask(entryIds);
      },
      committed: () => this.pagesByLog.set(logKey, pages),
    };
  }
}
