import { z } from 'zod';

const fieldErrorSchema = z.object({
  field: z.string().catch(''),
  code: z.string().catch(''),
  message: z.string().catch(''),
});

const problemSchema = z.object({
  type: z.string().optional(),
  title: z.string().optional(),
  status: z.number().optional(),
  detail: z.string().optional(),
  instance: z.string().optional(),
  requestId: z.string().optional(),
  errors: z.array(fieldErrorSchema).optional().catch(undefined),
  /** `trial_expired` on a 403 for an expired workspace, with its `upgrade_url`. */
  error: z.string().optional(),
  upgrade_url: z.string().optional(),
});

const EXCERPT_LENGTH = 200;

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
