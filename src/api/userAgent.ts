import { CHANGEFEED_VERSION } from '../version.js';

/**
 * `skills-changefeed/<version> (<instanceId>)`: lets the service's operators (and the simulator)
 * tell which replica made a request. The instance id was validated by the cluster config.
 */
export function serviceUserAgent(instanceId: string): string {
  return `skills-changefeed/${CHANGEFEED_VERSION} (${instanceId})`;
}
