import { CHANGEFEED_VERSION } from '../version.js';

/** The product token of every request to the service. */
export const USER_AGENT_PRODUCT = 'skills-changefeed';

/**
 * `skills-changefeed/<version> (<instanceId>)`: lets the service's operators (and the simulator)
 * tell which replica made a request. The instance id was validated by the cluster config.
 */
export function serviceUserAgent(instanceId: string, version: string = CHANGEFEED_VERSION): string {
  return `${USER_AGENT_PRODUCT}/${version} (${instanceId})`;
}
