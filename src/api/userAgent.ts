import { readFileSync } from 'node:fs';

/** The product token of every request to the service. */
export const USER_AGENT_PRODUCT = 'skills-changefeed';

// From src/api/ and dist/api/ alike, package.json is two folders up.
const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * `skills-changefeed/<version> (<instanceId>)`: lets the service's operators (and the simulator)
 * tell which replica made a request. The instance id was validated by the cluster config.
 */
export function serviceUserAgent(instanceId: string, version: string = PACKAGE_VERSION): string {
  return `${USER_AGENT_PRODUCT}/${version} (${instanceId})`;
}
