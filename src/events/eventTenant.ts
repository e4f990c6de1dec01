/**
 * Events journaled before the `tenant` attribute existed lack it, so every read of a stored event
 * (outbox payloads, journal pages) goes through `withTenantAttribute`: an event that carries the
 * attribute is returned byte for byte; one that does not gets it, the same bytes on every read.
 */
const STAMPED_PREFIX = '{"specversion":"1.0","tenant":';
const UNSTAMPED_PREFIX = '{"specversion":"1.0",';

export function withTenantAttribute(json: string, tenant: string): string {
  if (json.startsWith(STAMPED_PREFIX)) return json;
  if (json.startsWith(UNSTAMPED_PREFIX)) {
    // buildCloudEvent writes `specversion` first and `tenant` second: an event starting with
    // `specversion` and anything else was journaled without a tenant.
    return `${STAMPED_PREFIX}${JSON.stringify(tenant)},${json.slice(UNSTAMPED_PREFIX.length)}`;
  }
  // Not the builder's layout: parse, keeping an attribute that is already there.
  let event: unknown;
  try {
    event = JSON.parse(json);
  } catch {
    return json;
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return json;
  const attributes = event as Record<string, unknown>;
  if (typeof attributes.tenant === 'string') return json;
  const { specversion, ...rest } = attributes;
  return JSON.stringify({ specversion, tenant, ...rest });
}
