import { readAllIds } from '../api/listReader.js';
import type { LogKind } from '../logs.js';
import type { WatchOrigin } from '../store/storeRecords.js';
import type { RecordedDiscovery } from './discoverySchedule.js';
import type { LogPollerDeps } from './logPoller.js';
import type { WatchConfig } from './watchConfig.js';

/** The lists discovery reads (spec 4.1, 4.2), those that `watch` turns on. */
export function discoveryLists(watch: WatchConfig): { log: 'career' | 'skill'; path: string }[] {
  const lists = [
    { log: 'career' as const, path: '/api/v1/careers', enabled: watch.careers.discover },
    { log: 'skill' as const, path: '/api/v1/skills', enabled: watch.skills.discover },
  ];
  return lists.filter((l) => l.enabled).map(({ log, path }) => ({ log, path }));
}

/** The store's meta key recording when discovery last completed. */
export const LAST_DISCOVERY_KEY = 'discovery.lastCompletedAt';
/** The store's meta key recording which lists that discovery read (RecordedDiscovery.lists). */
export const LAST_DISCOVERY_LISTS_KEY = 'discovery.lists';

/**
 * Decides which logs are watched: the configured ids, the identity-provider log, and what
 * discovery finds. A log registered once keeps its cursor across restarts.
 */
export class WatchRegistry {
  constructor(private readonly deps: Omit<LogPollerDeps, 'events' | 'baseUrl'>) {}

  /** Where coverage of a log registered now starts: the service's now, or the configured startFrom. */
  configuredStart(): number {
    const { startFrom } = this.deps.watch;
    return startFrom === 'now' ? this.deps.serverClock.now() : Date.parse(startFrom);
  }

  /**
   * Where coverage of an object found by this discovery starts, given the previous one's recorded
   * start: at that start, so entries written since are emitted. A record that is not a time (a
   * corrupt meta row) falls back to the configured start; one ahead of this discovery's start is
   * capped at it, since a window that starts in the future reads nothing until then.
   */
  private coverageAfter(previous: string, startedAt: number): number {
    const recorded = Number(previous);
    if (!Number.isFinite(recorded)) return this.configuredStart();
    return Math.min(recorded, startedAt);
  }

  /**
   * Watches the logs from `coverageStart`, each unless it is watched already, in one write;
   * returns how many were new. Their first poll is due within firstPollWithinSeconds of now, a
   * deadline kept with each log across restarts.
   */
  private register(
    logs: readonly { log: LogKind; objectId: string }[],
    origin: WatchOrigin,
    coverageStart: number,
  ): Promise<number> {
    const now = this.deps.clock.now();
    const firstPollBy = now + this.deps.watch.schedule.firstPollWithinSeconds * 1000;
    return this.deps.store.watchedLogs.registerAll(
      logs.map(({ log, objectId }) => ({ log, objectId, origin, coverageStart, now, firstPollBy })),
    );
  }

  /**
   * Watches the configured logs not in `watched` (the store's list, as the caller read it): a
   * restart whose configured logs are all watched writes nothing (a fenced transaction per
   * tenant start on PostgreSQL). Returns how many logs were new.
   */
  async registerConfigured(watched: readonly { log: LogKind; objectId: string }[] = []): Promise<number> {
    const { watch } = this.deps;
    const known = new Set(watched.map((w) => `${w.log}/${w.objectId}`));
    const configured = [
      ...(watch.identityProviderEvents ? [{ log: 'identity_provider' as const, objectId: '' }] : []),
      ...watch.careers.ids.map((objectId) => ({ log: 'career' as const, objectId })),
      ...watch.skills.ids.map((objectId) => ({ log: 'skill' as const, objectId })),
    ];
    const missing = configured.filter((c) => !known.has(`${c.log}/${c.objectId}`));
    if (missing.length === 0) return 0;
    return this.register(missing, 'config', this.configuredStart());
  }

  /** Configured careers and skills the service answered 404 for: `run --once` fails on these. */
  async configuredGone(): Promise<{ log: 'career' | 'skill'; objectId: string; reason: string }[]> {
    const { store, watch } = this.deps;
    const configured = [
      ...watch.careers.ids.map((id) => ({ log: 'career' as const, objectId: id })),
      ...watch.skills.ids.map((id) => ({ log: 'skill' as const, objectId: id })),
    ];
    const gone: { log: 'career' | 'skill'; objectId: string; reason: string }[] = [];
    for (const { log, objectId } of configured) {
      const watched = await store.watchedLogs.get(log, objectId);
      if (watched?.status === 'gone') gone.push({ log, objectId, reason: watched.statusReason ?? 'answered 404' });
    }
    return gone;
  }

  /** The lists discovery reads with this config, as recorded (RecordedDiscovery.lists). */
  get discoveredLists(): string {
    return discoveryLists(this.deps.watch)
      .map((l) => l.log)
      .join(',');
  }

  /** The last discovery the store records, undefined if none completed. */
  async lastDiscovery(): Promise<RecordedDiscovery | undefined> {
    const at = await this.deps.store.getMeta(LAST_DISCOVERY_KEY);
    if (at === undefined) return undefined;
    return { at: Number(at), lists: await this.deps.store.getMeta(LAST_DISCOVERY_LISTS_KEY) };
  }

  get discoveryEnabled(): boolean {
    return this.deps.watch.careers.discover || this.deps.watch.skills.discover;
  }

  /**
   * Reads the career and skill lists and watches what is new. Objects found by a later discovery
   * were created (or became visible) since the previous one, so their coverage starts at the
   * previous discovery: their first entries are emitted, not skipped as history.
   */
  async discover(signal?: AbortSignal): Promise<{ added: number }> {
    const { store, watch, client } = this.deps;
    const previous = await store.getMeta(LAST_DISCOVERY_KEY);
    const startedAt = this.deps.serverClock.now();
    const coverageStart = previous === undefined ? this.configuredStart() : this.coverageAfter(previous, startedAt);
    const origin: WatchOrigin = previous === undefined ? 'discovered' : 'appeared';
    let added = 0;
    for (const set of discoveryLists(watch)) {
      const list = await readAllIds(client, set.path, watch.discovery.envelope, signal);
      if (list.truncated) {
        this.deps.logger.warn(
          { log: set.log, found: list.ids.length },
          `${set.path} lists more objects than offsets can reach; list them in watch.${set.log}s.ids`,
        );
      }
      added += await this.register(
        list.ids.map((objectId) => ({ log: set.log, objectId })),
        origin,
        coverageStart,
      );
    }
    await store.setMeta(LAST_DISCOVERY_KEY, String(startedAt));
    // Written when it changes only (a config turned a list on or off): one write per run otherwise.
    const lists = this.discoveredLists;
    if ((await store.getMeta(LAST_DISCOVERY_LISTS_KEY)) !== lists) await store.setMeta(LAST_DISCOVERY_LISTS_KEY, lists);
    if (added > 0) this.deps.logger.info({ added }, 'discovery found new objects to watch');
    return { added };
  }
}
