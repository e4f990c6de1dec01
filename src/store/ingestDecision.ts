import { performedAtMs, type ActivityEntry } from '../api/activityEntry.js';
import type { QuarantinedEntry } from '../api/quarantinedEntry.js';
import type { ChangeCloudEvent } from '../events/cloudEvent.js';
import { eventIdFor } from '../events/eventId.js';
import { ChangefeedError } from '../errors.js';
import { quarantineFingerprint } from './storedRows.js';
import type { IngestRequest, IngestResult } from './storeRecords.js';

/** What ingest does with one item of a read. */
export type IngestVerdict =
  /** Recorded as seen, and its event appended to the journal with a delivery per active sink. */
  | { kind: 'new' }
  /** Nothing emitted: the entry was ingested before (see DuplicateOf). */
  | { kind: 'duplicate'; of: DuplicateOf }
  /** Before the log's coverage (a silent entry): recorded as seen so it never emits, not emitted. */
  | { kind: 'outOfWindow' }
  /** Cannot become an event: kept aside for the operator with what is wrong with it. */
  | { kind: 'quarantine'; reason: string };

/**
 * What a duplicate repeats: an earlier item of the same read, an id recorded as seen, an event
 * still in the journal whose seen id was pruned, or an entry already in quarantine.
 */
export type DuplicateOf = 'read' | 'seen' | 'journal' | 'quarantine';

/** The read as the poller hands it over: IngestRequest's lists. */
type IngestRead = Pick<IngestRequest, 'log' | 'objectId' | 'entries' | 'silentEntries' | 'quarantined'>;

/** What the store holds that the decision depends on, asked about the read's items only. */
export interface IngestFacts {
  /** Ids of the read's entries (silent ones included) already recorded as seen for its log. */
  seen: ReadonlySet<string>;
  /** Journal ids (journalIdOf) of the read's entries whose event is in the journal. */
  journaled: ReadonlySet<string>;
  /** Fingerprints (quarantineFingerprint) of the read's quarantined entries already kept. */
  quarantinedBefore: ReadonlySet<string>;
}

/** The decision and the writes that carry it out, each list in the order of the read. */
export interface IngestDecision {
  /** One verdict per item of each of the read's lists, in that list's order. */
  verdicts: { silentEntries: IngestVerdict[]; entries: IngestVerdict[]; quarantined: IngestVerdict[] };
  /** Entries whose id to record as seen, each id once. */
  recordSeen: ActivityEntry[];
  /** Entries whose events to append, in ingestion order. */
  emit: ActivityEntry[];
  /** Entries to keep in quarantine, each raw entry once. */
  quarantine: QuarantinedEntry[];
  result: IngestResult;
}

/**
 * The id under which the journal keeps an entry's event: what `IngestFacts.journaled` is asked by,
 * and the id `IngestRequest.toEvent` must give the event.
 */
export function journalIdOf(read: Pick<IngestRequest, 'log' | 'objectId'>, entry: ActivityEntry): string {
  return eventIdFor(read.log, read.objectId, entry.id);
}

/**
 * What ingest does with each item of a read, both engines' one rule. Silent entries come first,
 * so an entry also listed as silent is a duplicate; within a read the first of an id (or of a raw
 * quarantined entry) counts and the rest are duplicates of the read. An entry whose seen id was
 * pruned while its event is still in the journal is a duplicate that is recorded as seen again.
 */
export function decideIngest(read: IngestRead, facts: IngestFacts): IngestDecision {
  const inRead = new Set<string>();
  const recordSeen: ActivityEntry[] = [];
  const emit: ActivityEntry[] = [];
  const quarantine: QuarantinedEntry[] = [];

  const silentEntries = (read.silentEntries ?? []).map((entry): IngestVerdict => {
    if (!inRead.has(entry.id) && !facts.seen.has(entry.id)) recordSeen.push(entry);
    inRead.add(entry.id);
    return { kind: 'outOfWindow' };
  });

  const entries = read.entries.map((entry): IngestVerdict => {
    if (inRead.has(entry.id)) return { kind: 'duplicate', of: 'read' };
    inRead.add(entry.id);
    if (facts.seen.has(entry.id)) return { kind: 'duplicate', of: 'seen' };
    recordSeen.push(entry);
    if (facts.journaled.has(journalIdOf(read, entry))) return { kind: 'duplicate', of: 'journal' };
    emit.push(entry);
    return { kind: 'new' };
  });

  const fingerprints = new Set<string>();
  const quarantined = (read.quarantined ?? []).map((entry): IngestVerdict => {
    const fingerprint = quarantineFingerprint(entry);
    if (fingerprints.has(fingerprint)) return { kind: 'duplicate', of: 'read' };
    fingerprints.add(fingerprint);
    if (facts.quarantinedBefore.has(fingerprint)) return { kind: 'duplicate', of: 'quarantine' };
    quarantine.push(entry);
    return { kind: 'quarantine', reason: entry.reason };
  });

  const emittedPerformedAt = emit.map(performedAtMs).filter((t): t is number => t !== null);
  return {
    verdicts: { silentEntries, entries, quarantined },
    recordSeen,
    emit,
    quarantine,
    result: {
      emitted: emit.length,
      duplicates: read.entries.length - emit.length,
      emittedPerformedAt,
      quarantined: quarantine.length,
    },
  };
}

/**
 * The event of an entry the decision emits. Its id must be the entry's journal id: the decision
 * asked the journal by it, so any other id could collide with an event already there.
 */
export function eventToAppend(request: IngestRequest, entry: ActivityEntry): ChangeCloudEvent {
  const event = request.toEvent(entry);
  const expected = journalIdOf(request, entry);
  if (event.id !== expected)
    throw new ChangefeedError(
      'STORE_ERROR',
      `the event built for entry ${JSON.stringify(entry.id)} has id ${event.id}, not its journal id ${expected}`,
    );
  return event;
}
