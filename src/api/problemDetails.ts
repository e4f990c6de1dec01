import { z } from 'zod';
import { quotedRequestId } from './responseHeaders.js';
import { cutText } from '../cutText.js';

const EXCERPT_LENGTH = 200;
/** The most of `detail` kept: the explanation, longer than a name or a code. */
const DETAIL_LENGTH = 500;
/** The most field errors kept; one more stands for those left out. */
const FIELD_ERRORS_KEPT = 10;

/**
 * A text of the document, cut to `max` characters. What the service writes becomes error messages,
 * which are logged, stored with the log (`last_error`) and shown by `status` and the console on every
 * failed poll: a 64 KiB `detail` must not be copied into each.
 */
const text = (max: number) => z.string().transform((s) => cutText(s, max));

const fieldErrorSchema = z.object({
  field: text(EXCERPT_LENGTH).catch(''),
  code: text(EXCERPT_LENGTH).catch(''),
  message: text(EXCERPT_LENGTH).catch(''),
});

type FieldError = z.infer<typeof fieldErrorSchema>;

const problemSchema = z.object({
  type: text(EXCERPT_LENGTH).optional(),
  title: text(EXCERPT_LENGTH).optional(),
  status: z.number().optional(),
  detail: text(DETAIL_LENGTH).optional(),
  instance: text(EXCERPT_LENGTH).optional(),
  requestId: z.string().transform(quotedRequestId).optional(),
  errors: z.array(fieldErrorSchema).transform(keptFieldErrors).optional().catch(undefined),
  /** `trial_expired` on a 403 for an expired workspace, with its `upgrade_url`. */
  error: text(EXCERPT_LENGTH).optional(),
  upgrade_url: text(EXCERPT_LENGTH).optional(),
});

/** The first FIELD_ERRORS_KEPT field errors, then one saying how many more the service listed. */
function keptFieldErrors(items: FieldError[]): FieldError[] {
  const kept = items.slice(0, FIELD_ERRORS_KEPT);
  const more = items.length - kept.length;
  return more > 0 ? [...kept, { field: '...', code: `${more} more`, message: '' }] : kept;
}

/**
 * RFC 9457 problem details as the service sends them (spec section 7). Parsing is tolerant:
 * a proxy in front of the service may answer 502 with HTML, so a body that is not a problem
 * document still yields a ProblemDetails with the status and a short excerpt as detail.
 */
export function parseProblemDetails(status: number, bodyText: string) {
  let json: unknown;
  try {
    json = JSON.parse(bodyText);
  } catch {
    json = undefined;
  }
  const parsed = problemSchema.safeParse(json);
  const p: z.infer<typeof problemSchema> = parsed.success ? parsed.data : {};
  const excerpt = bodyText.replace(/\s+/g, ' ').trim().slice(0, EXCERPT_LENGTH);
  return {
    /** Last path segment of `type`, e.g. `validation-error`; undefined when absent. */
    slug: p.type ? slugOf(p.type) : undefined,
    type: p.type,
    title: p.title,
    status: p.status ?? status,
    detail: parsed.success ? p.detail : excerpt === '' ? undefined : `non-problem body: ${excerpt}`,
    instance: p.instance,
    requestId: p.requestId,
    errors: p.errors ?? [],
    error: p.error,
    upgradeUrl: p.upgrade_url,
  };
}

export type ProblemDetails = ReturnType<typeof parseProblemDetails>;

function slugOf(type: string): string | undefined {
  const withoutQuery = type.split(/[?#]/)[0] ?? '';
  const segments = withoutQuery.split('/').filter((s) => s !== '');
  return segments.at(-1);
}

/** "limit: out_of_range (must be at most 200); from: invalid_timestamp" */
export function formatFieldErrors(problem: ProblemDetails): string {
  return problem.errors.map((e) => `${e.field}: ${e.code}${e.message ? ` (${e.message})` : ''}`).join('; ');
}
