/**
 * One request attributed to the replica that made it: what a test needs to prove that no company
 * (a tenant of the daemon) was polled by two replicas inside one lease period.
 */
export interface InstanceRequest {
  /** Clock time (epoch ms) at which the request arrived. */
  readonly at: number;
  /** Index of the company the key belongs to (0 is the first); null when the key was not accepted. */
  readonly company: number | null;
  /** From `User-Agent: skills-changefeed/<version> (<instanceId>)`; null for any other User-Agent. */
  readonly instanceId: string | null;
  readonly path: string;
  readonly status: number;
}

// What the daemon sends (src/api/userAgent.ts), parsed independently so a drift in either shows.
// The instance id is bounded the way cluster.instanceId is (at most 128 of letters, digits, ._:@+-).
const DAEMON_USER_AGENT = /^skills-changefeed\/[^\s()]{1,64} \(([A-Za-z0-9._:@+-]{1,128})\)$/;

/** The instance id a daemon put into its User-Agent, or null when the header is absent or of another form. */
export function instanceIdFrom(userAgent: string | undefined): string | null {
  if (userAgent === undefined || userAgent.length > 256) return null;
  return DAEMON_USER_AGENT.exec(userAgent)?.[1] ?? null;
}
