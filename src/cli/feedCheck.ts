import type { AppConfig } from '../config/appConfigSchema.js';
import { describeError } from '../errors.js';
import { readFeedTokens } from '../feed/feedTokens.js';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { checkFailed, type CheckResult } from './checkResult.js';

/**
 * Whether the pull feed of `tenant` can start as configured: its own port to serve on and
 * readable tokens; when it can, where this tenant's feed is read and by how many tokens.
 */
export function checkFeed(config: AppConfig, tenant: string = DEFAULT_TENANT): CheckResult | undefined {
  const feed = config.feed;
  if (!feed.enabled) return undefined;
  const name = 'feed';
  if (feed.port === null)
    return checkFailed(
      name,
      'feed.enabled but the feed has no listener',
      'set feed.port (or CHANGEFEED_FEED_PORT), a port other than http.port',
    );
  try {
    const own = readFeedTokens(feed.tokens, feed.tokenFiles, 'feed.tokenFiles').length;
    const every = readFeedTokens(feed.allTenantsTokens, feed.allTenantsTokenFiles, 'feed.allTenantsTokenFiles').length;
    if (own + every === 0)
      return checkFailed(
        name,
        'no bearer token',
        tenant === DEFAULT_TENANT
          ? 'add one to feed.tokens or feed.tokenFiles'
          : `add one to feed.tokens or feed.tokenFiles of tenant ${tenant}'s file`,
      );
    const path = tenant === DEFAULT_TENANT ? '/v1/events' : `/v1/tenants/${tenant}/events`;
    const tokens = `${own} token${own === 1 ? '' : 's'}${every > 0 ? ` (and ${every} of every tenant)` : ''}`;
    return { name, ok: true, detail: `${path} and ${path}/stream on ${feed.host}:${feed.port}, ${tokens}` };
  } catch (error) {
    return checkFailed(name, describeError(error), 'check the paths in feed.tokenFiles and feed.allTenantsTokenFiles');
  }
}
