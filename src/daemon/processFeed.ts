import type { Logger } from 'pino';
import { listenBounded, type BoundedListener } from '../boundedListener.js';
import type { MainConfig } from '../config/mainConfig.js';
import type { TenantConfig } from '../config/tenantConfigSchema.js';
import { ConfigError, describeError } from '../errors.js';
import type { EventFeed } from '../feed/eventFeed.js';
import type { FeedConfig } from '../feed/feedConfig.js';
import { FeedSlots, FeedTokens, readFeedTokens } from '../feed/feedTokens.js';
import type { Tenant } from '../tenants/tenant.js';
import type { FeedRouterMetrics } from '../observe/feedRouterMetrics.js';
import { feedTokenGrants, routeTenantFeeds, type RedirectTickets, type TenantsElsewhere } from './tenantFeeds.js';

/**
 * The pull feed of the process: its own listener, the tokens of every tenant the process knows
 * (rebuilt when the tenants change) and the per-token limits shared by the tenants' feeds.
 */
export class ProcessFeed {
  private readonly slots: FeedSlots;
  private tokens = new FeedTokens([]);
  private known = new Set<string>();
  private server: BoundedListener | undefined;
  private elsewhere: TenantsElsewhere | undefined;
  private tickets: RedirectTickets | undefined;

  constructor(
    private readonly config: FeedConfig,
    private readonly logger: Logger,
    private readonly metrics?: FeedRouterMetrics,
  ) {
    this.slots = new FeedSlots(config);
  }

  /** The feed as `main` configures it; ConfigError says what to set. */
  static check(main: MainConfig): void {
    const feed = main.process.feed;
    if (!feed.enabled) return;
    if (feed.port === null)
      throw new ConfigError(
        'feed.enabled needs its own listener: set feed.port (or CHANGEFEED_FEED_PORT); the feed is not ' +
          'served on http.port, so that feed clients cannot starve the health probes',
        [{ path: 'feed.port', message: 'set a port for the feed, other than http.port' }],
      );
    if (feed.port !== 0 && feed.port === main.process.http.port && feed.host === main.process.http.host)
      throw new ConfigError('feed.port is http.port: give the feed a port of its own', [
        { path: 'feed.port', message: 'a port other than http.port' },
      ]);
    const every = readFeedTokens(feed.allTenantsTokens, feed.allTenantsTokenFiles, 'feed.allTenantsTokenFiles');
    if (main.tenants.kind !== 'main') return;
    const own = main.tenants.config.feed ?? { tokens: [], tokenFiles: [] };
    if (every.length + readFeedTokens(own.tokens, own.tokenFiles, 'feed.tokenFiles').length === 0)
      throw new ConfigError('feed.enabled needs at least one bearer token in feed.tokens or feed.tokenFiles', [
        { path: 'feed.tokens', message: 'add a token (at least 16 characters), e.g. from ${FEED_TOKEN}' },
      ]);
  }

  /** The tenants this process knows changed: their tokens now read their feeds, and only those. */
  setTenants(tenants: readonly Tenant<TenantConfig>[]): void {
    const grants = feedTokenGrants(this.config, tenants, (tenant, error) =>
      this.logger.error(
        { tenant, err: describeError(error) },
        "the tenant's feed tokens cannot be read; its feed answers only tokens of every tenant",
      ),
    );
    this.tokens = new FeedTokens(grants);
    this.known = new Set(tenants.map((t) => t.name));
  }

  /**
   * On a store shared by replicas, once it is open: known tenants not running here go to their
   * holder, with a ticket signed by the key the replicas share, and tickets from them are accepted.
   */
  sendElsewhere(elsewhere: TenantsElsewhere, tickets: RedirectTickets): void {
    this.elsewhere = elsewhere;
    this.tickets = tickets;
  }

  /** Starts the feed's own listener; `feedOf` finds the feed of a tenant running here. */
  async start(feedOf: (tenant: string) => EventFeed | undefined): Promise<string> {
    this.server = await listenBounded(this.config, (req, res) =>
      routeTenantFeeds(req, res, {
        tokens: () => this.tokens,
        slots: this.slots,
        feedOf,
        knows: (tenant) => this.known.has(tenant),
        elsewhere: () => this.elsewhere,
        tickets: () => this.tickets,
        answered: (status, reason) => this.metrics?.answered(status, reason),
      }),
    );
    return this.server.url;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }
}
