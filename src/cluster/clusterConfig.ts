import { hostname } from 'node:os';
import { z } from 'zod';

/** Longest instance id: it travels in every request's User-Agent and names the replica in logs. */
export const INSTANCE_ID_MAX_LENGTH = 128;
const INSTANCE_ID_PATTERN = /^[A-Za-z0-9._:@+-]+$/;
const INSTANCE_ID_DISALLOWED = /[^A-Za-z0-9._:@+-]+/g;

/**
 * Bounds of `cluster.leaseSeconds`. Below 3 s a lease is renewed every second and a GC pause or
 * a slow round trip to PostgreSQL would cost it; above an hour a crashed replica's tenants wait
 * that long for another.
 */
export const LEASE_SECONDS_MIN = 3;
export const LEASE_SECONDS_MAX = 3600;

/**
 * `<hostname>-<pid>` with every character an instance id may not hold replaced by `-`, the
 * hostname shortened so the whole fits INSTANCE_ID_MAX_LENGTH: unique per process on a host, and
 * in Kubernetes (where the hostname is the pod name) per pod.
 */
export function defaultInstanceId(host: string = hostname(), pid: number = process.pid): string {
  const suffix = `-${pid}`;
  const cleaned = host.replace(INSTANCE_ID_DISALLOWED, '-').replace(/^-+|-+$/g, '') || 'host';
  return `${cleaned.slice(0, INSTANCE_ID_MAX_LENGTH - suffix.length)}${suffix}`;
}

/** Longest `cluster.advertiseUrl`: it is stored in the instance row and sent in every redirect's Location. */
export const ADVERTISE_URL_MAX_LENGTH = 512;

/**
 * A URL other replicas may send clients to: http or https, no credentials, query or fragment (the
 * redirect appends the request's own path and query to it). The trailing `/` is dropped, so a
 * path prefix (`https://feeds.example.com/replica-0`) joins the request path without doubling it.
 * Undefined for anything else, so a row written by hand or by a broken build is never followed.
 */
export function parseAdvertiseUrl(text: string | null | undefined): string | undefined {
  if (typeof text !== 'string' || text.length > ADVERTISE_URL_MAX_LENGTH || !URL.canParse(text)) return undefined;
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username || url.password || url.search || url.hash || text.includes('?') || text.includes('#'))
    return undefined;
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

const advertisedUrl = z
  .string()
  .max(ADVERTISE_URL_MAX_LENGTH, `must be at most ${ADVERTISE_URL_MAX_LENGTH} characters`)
  .optional()
  .superRefine((text, ctx) => {
    if (text !== undefined && parseAdvertiseUrl(text) === undefined)
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: 'must be an http or https URL without credentials, query or fragment',
      });
  })
  .transform((text) => (text === undefined ? undefined : parseAdvertiseUrl(text)));

export const clusterConfigSchema = z
  .object({
    instanceId: z
      .string()
      .min(1, 'must not be empty')
      .max(INSTANCE_ID_MAX_LENGTH, `must be at most ${INSTANCE_ID_MAX_LENGTH} characters`)
      .regex(INSTANCE_ID_PATTERN, 'may hold only letters, digits and . _ : @ + - (it is sent in the User-Agent header)')
      .optional()
      // Resolved here, not by a zod default: the generated reference must not show this host's name.
      .transform((id) => id ?? defaultInstanceId())
      .describe(
        'Name of this replica, sent to the service in every request as `User-Agent: ' +
          'skills-changefeed/<version> (<instanceId>)`. Default: `<hostname>-<pid>` (characters ' +
          'other than letters, digits and `._:@+-` become `-`). At most 128 characters.',
      ),
    leaseSeconds: z
      .number()
      .int()
      .min(LEASE_SECONDS_MIN)
      .max(LEASE_SECONDS_MAX)
      .default(15)
      .describe(
        'With a PostgreSQL store: how long a replica holds a tenant without renewing it, measured on the ' +
          "database's clock. Leases are renewed every third of it; a replica that cannot renew stops writing " +
          'a fifth of it (at least 1 s) before the lease may expire, and another replica takes the tenant ' +
          `once it has expired. ${LEASE_SECONDS_MIN} to ${LEASE_SECONDS_MAX}. See docs/leases.md.`,
      ),
    advertiseUrl: advertisedUrl.describe(
      "With a PostgreSQL store: the base URL at which clients reach this replica's feed (its `feed.port` " +
        'listener), e.g. `http://10.1.2.3:8080` or `https://feeds.example.com/replica-0`, recorded in the store ' +
        "with the replica's heartbeat. A feed request for a tenant another replica holds is redirected (307) to " +
        "the holder's URL with the same path and query. Ignored while the feed is off. Unset (the default, " +
        'CHANGEFEED_ADVERTISE_URL): this replica is never redirected to; a request for a tenant it holds reaching ' +
        'another replica is answered 503 naming it, with Retry-After. See docs/scaling.md.',
    ),
    advertiseHealthUrl: advertisedUrl.describe(
      "With a PostgreSQL store: the base URL of this replica's health server (`http.port`), e.g. " +
        '`http://10.1.2.3:9464`, recorded with its heartbeat so `status --tenant` run anywhere asks the holder ' +
        'of the tenant for its live sink state (`<url>/readyz`). Ignored while `http.port` is null. Unset (the ' +
        'default, CHANGEFEED_ADVERTISE_HEALTH_URL): status asks `http.port` on its own host, and trusts the ' +
        'answer only if that daemon runs the tenant.',
    ),
  })
  .strict();
