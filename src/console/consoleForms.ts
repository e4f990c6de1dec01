import { TYPE_GLOB } from '../feed/feedQuery.js';
import { LOG_KINDS } from '../logs.js';
import type { JournalRange } from '../store/storeRecords.js';

/** A field of a form and what is wrong with it, shown next to the field. */
export interface FieldError {
  field: string;
  message: string;
}

export interface ReplayRequest {
  sink: string;
  range: JournalRange;
}

/** What the replay form holds, as typed: shown again with the errors. */
export interface ReplayForm {
  sink: string;
  since: string;
  until: string;
  log: string;
  type: string;
}

const TYPE_GLOB_HINT =
  'a glob of letters, digits, `.`, `_`, `-`, `*` (any run of characters) and `?` (one character), up to 200';

export function replayFormOf(params: URLSearchParams): ReplayForm {
  const get = (name: string) => (params.get(name) ?? '').trim();
  return { sink: get('sink'), since: get('since'), until: get('until'), log: get('log'), type: get('type') };
}

/**
 * The replay a form asks for, or every field that is wrong: a sink of the tenant, `since` and
 * optionally `until` as ISO 8601 times with a zone (`until` after `since`), a log, a type glob.
 */
export function parseReplayForm(
  form: ReplayForm,
  sinks: readonly string[],
): { request: ReplayRequest } | { errors: FieldError[] } {
  const errors: FieldError[] = [];
  if (!sinks.includes(form.sink))
    errors.push({
      field: 'sink',
      message:
        form.sink === '' ? 'choose a sink' : `no sink named "${form.sink}" here (sinks: ${sinks.join(', ') || 'none'})`,
    });
  const since = parseTime(form.since);
  if (form.since === '') errors.push({ field: 'since', message: 'give the start, e.g. 2026-11-20T00:00:00Z' });
  else if (since === undefined)
    errors.push({ field: 'since', message: `"${form.since}" is not an ISO 8601 time with a zone` });
  const until = form.until === '' ? undefined : parseTime(form.until);
  if (form.until !== '' && until === undefined)
    errors.push({ field: 'until', message: `"${form.until}" is not an ISO 8601 time with a zone` });
  else if (since !== undefined && until !== undefined && until <= since)
    errors.push({ field: 'until', message: 'must be after since' });
  const log = form.log === '' ? undefined : LOG_KINDS.find((k) => k === form.log);
  if (form.log !== '' && log === undefined)
    errors.push({ field: 'log', message: `must be one of ${LOG_KINDS.join(', ')}, or empty for every log` });
  const type = form.type === '' ? undefined : form.type;
  if (type !== undefined && !TYPE_GLOB.test(type)) errors.push({ field: 'type', message: `must be ${TYPE_GLOB_HINT}` });
  if (errors.length > 0) return { errors };
  return { request: { sink: form.sink, range: { since, until, log, type } } };
}

/** The live tail's type filter: empty for every type. */
export function parseTailType(value: string | null): { type: string | undefined } | { error: FieldError } {
  const type = (value ?? '').trim();
  if (type === '') return { type: undefined };
  if (!TYPE_GLOB.test(type)) return { error: { field: 'type', message: `must be ${TYPE_GLOB_HINT}` } };
  return { type };
}

/** An ISO 8601 date-time with a zone (`Z` or an offset): a time without one would be read in the server's zone. */
function parseTime(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(text)) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}
