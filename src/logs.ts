// The three activity logs of the service (spec 4.5 and 6): everything that differs between them is declared here, once.

/**
 * A log's one name wherever people, programs and the store read or write one: event types and
 * ids, metric labels, the feed's `log=`, `--log`, `filter.logs`, `watch.sortOrder`, `status`, log
 * lines and the store's `log` columns.
 */
export type LogKind = 'career' | 'skill' | 'identity_provider';

export const LOG_KINDS: readonly LogKind[] = ['career', 'skill', 'identity_provider'];

export type ActivityFilter = 'event' | 'from' | 'to' | 'performedBy' | 'relatedPersonId' | 'bulkGroupId';

export interface LogDescriptor {
  readonly kind: LogKind;
  /** Whether the log is per object (career, skill) or company-wide. */
  readonly perObject: boolean;
  /** The scope a key needs to read it (spec 4.5). */
  readonly scope: string;
  /** Filters the log accepts; any other filter is rejected by the service (4.5 rules 1-4). */
  readonly filters: ReadonlySet<ActivityFilter>;
  /** Whether the log can be read in time windows; the skill log cannot (4.5 rule 6). */
  readonly windowed: boolean;
  path(objectId: string | undefined): string;
}

const encode = (id: string | undefined): string => {
  if (id === undefined || id === '') throw new Error('a per-object log needs an object id');
  return encodeURIComponent(id);
};

export const LOGS: Readonly<Record<LogKind, LogDescriptor>> = {
  career: {
    kind: 'career',
    perObject: true,
    scope: 'careers:read',
    filters: new Set<ActivityFilter>(['event', 'from', 'to', 'performedBy', 'relatedPersonId', 'bulkGroupId']),
    windowed: true,
    path: (id) => `/api/v1/careers/${encode(id)}/activity`,
  },
  skill: {
    kind: 'skill',
    perObject: true,
    scope: 'skills:read',
    // The skill log rejects relatedPersonId, and offers no date filter for polling (4.5 rules 2, 6).
    filters: new Set<ActivityFilter>(['event', 'performedBy']),
    windowed: false,
    path: (id) => `/api/v1/skills/${encode(id)}/activity`,
  },
  identity_provider: {
    kind: 'identity_provider',
    perObject: false,
    scope: 'people:read',
    // The identity-provider log rejects performedBy (4.5 rule 3).
    filters: new Set<ActivityFilter>(['event', 'from', 'to', 'relatedPersonId']),
    windowed: true,
    path: () => '/api/v1/identity-provider-events',
  },
};

/** A name that was once accepted for a log and still is on input, with a deprecation note. */
const DEPRECATED_LOG_NAMES: Readonly<Record<string, LogKind>> = { identityProvider: 'identity_provider' };

/**
 * The log a name given on input stands for: its name, or a deprecated spelling (`deprecated`
 * then says what to write instead). Undefined for anything else.
 */
export function parseLogName(name: string): { kind: LogKind; deprecated?: string } | undefined {
  const kind = LOG_KINDS.find((k) => k === name);
  if (kind) return { kind };
  const old = Object.hasOwn(DEPRECATED_LOG_NAMES, name) ? DEPRECATED_LOG_NAMES[name] : undefined;
  if (!old) return undefined;
  return { kind: old, deprecated: `the log name "${name}" is deprecated; write "${old}"` };
}

/**
 * The one name of a watched log: `<log>:<objectId>` (`identity_provider:` for the company-wide
 * log). The scheduler keys its plan by it, failures back off by it, and it is the delivery
 * ordering key: events with the same key reach a destination in order.
 */
export const logKey = (w: { readonly log: LogKind; readonly objectId: string }): string => `${w.log}:${w.objectId}`;

/** The spec's hard pagination caps (section 8). */
export const MAX_PAGE_LIMIT = 200;
export const MAX_OFFSET = 10_000;
/** How many entries one window can reach: the last page starts at the largest offset. */
export const MAX_REACHABLE_ENTRIES = MAX_OFFSET + MAX_PAGE_LIMIT;
