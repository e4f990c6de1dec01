import { describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import type { QuarantinedEntry } from '../../src/api/quarantinedEntry.js';
import { decideIngest, journalIdOf, type IngestVerdict } from '../../src/store/ingestDecision.js';
import { quarantineFingerprint } from '../../src/store/storedRows.js';

const T = Date.UTC(2026, 4, 1, 12, 0, 0);
const LOG = { log: 'career', objectId: 'c-1' } as const;

const entry = (id: string, performedAt: number | null = T): ActivityEntry => ({
  id,
  event: 'level_added',
  performedAt: performedAt === null ? null : new Date(performedAt).toISOString(),
});
const invalid = (raw: string, reason = 'performedAt: not a timestamp'): QuarantinedEntry => ({
  raw,
  rawBytes: Buffer.byteLength(raw),
  entryId: undefined,
  reason,
  requestId: 'req-1',
});

const NEW: IngestVerdict = { kind: 'new' };
const OUT: IngestVerdict = { kind: 'outOfWindow' };
const dup = (of: 'read' | 'seen' | 'journal' | 'quarantine'): IngestVerdict => ({ kind: 'duplicate', of });

interface Case {
  name: string;
  entries?: ActivityEntry[];
  silent?: ActivityEntry[];
  invalid?: QuarantinedEntry[];
  seen?: string[];
  /** Entry ids whose event the journal holds. */
  journaled?: string[];
  quarantinedBefore?: QuarantinedEntry[];
  verdicts: { entries?: IngestVerdict[]; silent?: IngestVerdict[]; invalid?: IngestVerdict[] };
  recordSeen: string[];
  emit: string[];
  result: { emitted: number; duplicates: number; quarantined: number };
}

const BAD = invalid('{"id":1}', 'id: expected string');

const cases: Case[] = [
  {
    name: 'an empty read decides nothing',
    verdicts: {},
    recordSeen: [],
    emit: [],
    result: { emitted: 0, duplicates: 0, quarantined: 0 },
  },
  {
    name: 'new entries are emitted in the order read',
    entries: [entry('c'), entry('a'), entry('b')],
    verdicts: { entries: [NEW, NEW, NEW] },
    recordSeen: ['c', 'a', 'b'],
    emit: ['c', 'a', 'b'],
    result: { emitted: 3, duplicates: 0, quarantined: 0 },
  },
  {
    name: 'a repeat within the read is a duplicate of the read; the first one counts',
    entries: [entry('a'), entry('b'), entry('a')],
    verdicts: { entries: [NEW, NEW, dup('read')] },
    recordSeen: ['a', 'b'],
    emit: ['a', 'b'],
    result: { emitted: 2, duplicates: 1, quarantined: 0 },
  },
  {
    name: 'an id seen before is a duplicate and not recorded again',
    entries: [entry('old'), entry('new')],
    seen: ['old'],
    verdicts: { entries: [dup('seen'), NEW] },
    recordSeen: ['new'],
    emit: ['new'],
    result: { emitted: 1, duplicates: 1, quarantined: 0 },
  },
  {
    name: 'an event still in the journal whose seen id was pruned is a duplicate, recorded as seen again',
    entries: [entry('pruned'), entry('pruned')],
    journaled: ['pruned'],
    verdicts: { entries: [dup('journal'), dup('read')] },
    recordSeen: ['pruned'],
    emit: [],
    result: { emitted: 0, duplicates: 2, quarantined: 0 },
  },
  {
    name: 'entries before the window (silent) are recorded as seen, never emitted',
    silent: [entry('h-1', T - 10_000), entry('h-2', null)],
    verdicts: { silent: [OUT, OUT] },
    recordSeen: ['h-1', 'h-2'],
    emit: [],
    result: { emitted: 0, duplicates: 0, quarantined: 0 },
  },
  {
    name: 'a silent entry seen before or repeated stays out of the window and is recorded once at most',
    silent: [entry('h-1'), entry('h-2'), entry('h-2')],
    seen: ['h-1'],
    verdicts: { silent: [OUT, OUT, OUT] },
    recordSeen: ['h-2'],
    emit: [],
    result: { emitted: 0, duplicates: 0, quarantined: 0 },
  },
  {
    name: 'an entry also listed before the window is a duplicate of the read, whichever list it is in first',
    entries: [entry('x'), entry('y')],
    silent: [entry('y')],
    verdicts: { entries: [NEW, dup('read')], silent: [OUT] },
    recordSeen: ['y', 'x'],
    emit: ['x'],
    result: { emitted: 1, duplicates: 1, quarantined: 0 },
  },
  {
    name: 'invalid entries are quarantined with their reason; the same raw entry twice once',
    entries: [entry('a')],
    invalid: [BAD, invalid('{"x":1}', 'id: required'), BAD],
    verdicts: {
      entries: [NEW],
      invalid: [
        { kind: 'quarantine', reason: 'id: expected string' },
        { kind: 'quarantine', reason: 'id: required' },
        dup('read'),
      ],
    },
    recordSeen: ['a'],
    emit: ['a'],
    result: { emitted: 1, duplicates: 0, quarantined: 2 },
  },
  {
    name: 'an invalid entry already in quarantine is not counted again',
    invalid: [BAD],
    quarantinedBefore: [BAD],
    verdicts: { invalid: [dup('quarantine')] },
    recordSeen: [],
    emit: [],
    result: { emitted: 0, duplicates: 0, quarantined: 0 },
  },
  {
    name: 'ids differing only by a NUL or U+FFFD are different entries',
    entries: [entry('e\u0000-1'), entry('e\uFFFD-1')],
    seen: ['e\uFFFD-1'],
    verdicts: { entries: [NEW, dup('seen')] },
    recordSeen: ['e\u0000-1'],
    emit: ['e\u0000-1'],
    result: { emitted: 1, duplicates: 1, quarantined: 0 },
  },
];

describe('decideIngest', () => {
  it.each(cases)('$name', (c) => {
    const entries = c.entries ?? [];
    const decision = decideIngest(
      { ...LOG, entries, silentEntries: c.silent, quarantined: c.invalid },
      {
        seen: new Set(c.seen ?? []),
        journaled: new Set((c.journaled ?? []).map((id) => journalIdOf(LOG, entry(id)))),
        quarantinedBefore: new Set((c.quarantinedBefore ?? []).map(quarantineFingerprint)),
      },
    );
    expect(decision.verdicts).toEqual({
      entries: c.verdicts.entries ?? [],
      silentEntries: c.verdicts.silent ?? [],
      quarantined: c.verdicts.invalid ?? [],
    });
    expect(decision.recordSeen.map((e) => e.id)).toEqual(c.recordSeen);
    expect(decision.emit.map((e) => e.id)).toEqual(c.emit);
    expect(decision.result).toMatchObject(c.result);
  });

  it('reports the performedAt of emitted entries only, in order, leaving out undated ones', () => {
    const decision = decideIngest(
      { ...LOG, entries: [entry('b', T - 2), entry('undated', null), entry('seen', T - 5), entry('a', T - 1)] },
      { seen: new Set(['seen']), journaled: new Set(), quarantinedBefore: new Set() },
    );
    expect(decision.result.emittedPerformedAt).toEqual([T - 2, T - 1]);
  });

  it('keeps an entry the journal holds for another log or object apart', () => {
    const elsewhere = journalIdOf({ log: 'career', objectId: 'c-2' }, entry('a'));
    const decision = decideIngest(
      { ...LOG, entries: [entry('a')] },
      { seen: new Set(), journaled: new Set([elsewhere]), quarantinedBefore: new Set() },
    );
    expect(decision.verdicts.entries).toEqual([NEW]);
  });
});
