// What the daemon sends (src/api/userAgent.ts), parsed independently so a drift in either shows.
// The instance id is bounded the way cluster.instanceId is (at most 128 of letters, digits, ._:@+-).
const DAEMON_USER_AGENT = /^skills-changefeed\/[^\s()]{1,64} \(([A-Za-z0-9._:@+-]{1,128})\)$/;

/** The instance id a daemon put into its User-Agent, or null when the header is absent or of another form. */
export function instanceIdFrom(userAgent: string | undefined): string | null {
  if (userAgent === undefined || userAgent.length > 256) return null;
  return DAEMON_USER_AGENT.exec(userAgent)?.[1] ?? null;
}
