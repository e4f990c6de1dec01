import { LOGS, MAX_OFFSET, MAX_PAGE_LIMIT, type LogKind } from '../logs.js';
import type { EntryFilter } from './activityStore.js';
import { isKnownEvent } from './eventCatalog.js';
import type { FieldError } from './problemResponses.js';

export interface Paging {
  limit: number;
  offset: number;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

export const DEFAULT_PAGE_LIMIT = 50;

const PAGING_PARAMS = ['limit', 'offset'];
const LOG_NAMES: Readonly<Record<LogKind, string>> = {
  career: 'career activity log',
  skill: 'skill activity log',
  identity_provider: 'identity-provider event log',
};

/**
 * Validates an activity read the way the service does (spec 4.5): a filter the log cannot support
 * is rejected, never ignored; an unknown event is an error, not an empty page. Every problem is
 * reported at once so a client developer can fix a request in one round trip.
 */
export function parseActivityQuery(
  log: LogKind,
  params: URLSearchParams,
): Parsed<{ filter: EntryFilter; paging: Paging }> {
  const allowed = [...LOGS[log].filters, ...PAGING_PARAMS];
  const errors = checkParameterNames(params, allowed, LOG_NAMES[log]);
  const filter: EntryFilter = {};
  const event = params.get('event');
  if (event !== null && allowed.includes('event')) {
    if (isKnownEvent(log, event)) filter.event = event;
    else
      errors.push({
        field: 'event',
        code: 'unknown_event',
        message: `'${event}' is not an event type of the ${LOG_NAMES[log]}.`,
      });
  }
  for (const bound of ['from', 'to'] as const) {
    const raw = params.get(bound);
    if (raw === null || !allowed.includes(bound)) continue;
    const at = parseUtcTimestamp(raw);
    if (at === null) {
      errors.push({
        field: bound,
        code: 'invalid_timestamp',
        message: `${bound} must be an ISO 8601 UTC timestamp such as 2026-01-01T00:00:00Z.`,
      });
    } else {
      filter[bound] = at;
    }
  }
  for (const field of ['performedBy', 'relatedPersonId', 'bulkGroupId'] as const) {
    const value = params.get(field);
    if (value !== null && allowed.includes(field)) filter[field] = value;
  }
  const paging = parsePaging(params, errors);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: { filter, paging } };
}

/** Validates a discovery list read: paging only. */
export function parseListQuery(params: URLSearchParams, listName: string): Parsed<Paging> {
  const errors = checkParameterNames(params, PAGING_PARAMS, listName);
  const paging = parsePaging(params, errors);
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: paging };
}

function checkParameterNames(params: URLSearchParams, allowed: readonly string[], target: string): FieldError[] {
  const errors: FieldError[] = [];
  for (const name of new Set(params.keys())) {
    if (!allowed.includes(name)) {
      errors.push({
        field: name,
        code: 'unsupported_filter',
        message: `The ${target} does not support the '${name}' parameter; it accepts ${allowed.join(', ')}.`,
      });
    } else if (params.getAll(name).length > 1) {
      errors.push({ field: name, code: 'duplicate_parameter', message: `'${name}' may be given only once.` });
    }
  }
  return errors;
}

function parsePaging(params: URLSearchParams, errors: FieldError[]): Paging {
  const bounded = (field: 'limit' | 'offset', min: number, max: number): number | undefined => {
    const value = parseBoundedInteger(params.get(field), min, max);
    if (value === null)
      errors.push({ field, code: 'out_of_range', message: `${field} must be an integer from ${min} to ${max}.` });
    return value ?? undefined;
  };
  return {
    limit: bounded('limit', 1, MAX_PAGE_LIMIT) ?? DEFAULT_PAGE_LIMIT,
    offset: bounded('offset', 0, MAX_OFFSET) ?? 0,
  };
}

/** undefined when absent (the default applies), null when present but invalid. */
function parseBoundedInteger(raw: string | null, min: number, max: number): number | undefined | null {
  if (raw === null) return undefined;
  if (!/^\d{1,6}$/.test(raw)) return null;
  const value = Number(raw);
  return value >= min && value <= max ? value : null;
}

// `(?!00)`: a year before 0100 is refused. Date.UTC reads such a year as 19xx, so a client that
// builds its dates from parts would disagree with us on the century.
const UTC_TIMESTAMP = /^(?!00)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|\+00:00)$/;

/** Epoch ms of an ISO 8601 timestamp in UTC (Z or +00:00), or null; sub-millisecond digits are cut. */
export function parseUtcTimestamp(raw: string): number | null {
  const at = UTC_TIMESTAMP.test(raw) ? Date.parse(raw) : Number.NaN;
  // Date.parse rolls 2026-02-30 (and 24:00) over into the next day; the service would reject such a date.
  return Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== raw.slice(0, 10) ? null : at;
}
