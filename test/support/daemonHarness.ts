import { join } from 'node:path';
import { ChangefeedDaemon, type DaemonOptions } from '../../src/daemon/changefeedDaemon.js';
import { type Clock } from '../../src/clock.js';
import { ManualClock } from './manualClock.js';
import { appConfigSchema, type AppConfig } from '../../src/config/appConfigSchema.js';
import { eventIdFor } from '../../src/events/eventId.js';
import { noopLogger } from './noopLogger.js';
import type { SimulatedCompany, Simulator } from '../../src/simulator/index.js';
import { readJsonLines } from './jsonLines.js';
import { withVirtualTime } from './virtualTime.js';

export interface HarnessConfig {
  simulator: Simulator;
  stateDir: string;
  /** The key of the company to poll; the simulator's first company by default. */
  apiKey?: string;
  startFrom?: string;
  /** Extra settings merged over the defaults below (shallow per top-level key). */
  overrides?: Partial<Record<keyof AppConfig, unknown>>;
}

/** Config for a daemon watching everything the simulator has, writing to one file sink. */
export function simulatorConfig(h: HarnessConfig): AppConfig {
  return appConfigSchema.parse({
    api: { baseUrl: h.simulator.url, apiKey: h.apiKey ?? h.simulator.apiKey, timeoutMs: 5_000 },
    watch: {
      careers: { discover: true },
      skills: { discover: true },
      startFrom: h.startFrom ?? 'now',
      pollIntervalSeconds: 0,
      ...(h.overrides?.watch as object | undefined),
    },
    budget: { readsPerHour: 3_600_000, reserve: 0, ...(h.overrides?.budget as object | undefined) },
    sinks: h.overrides?.sinks ?? [{ name: 'file', type: 'file', path: join(h.stateDir, 'events.jsonl') }],
    stateDir: h.stateDir,
    ...(h.overrides?.events ? { events: h.overrides.events } : {}),
    ...(h.overrides?.cluster ? { cluster: h.overrides.cluster } : {}),
  });
}

export function createDaemon(
  config: AppConfig,
  options: Partial<DaemonOptions> & { clock?: Clock } = {},
): ChangefeedDaemon {
  return new ChangefeedDaemon(config, { logger: noopLogger, ...options });
}

/** Runs one sweep plus delivery and stops the daemon; on a ManualClock, in virtual time. */
export async function runOnce(config: AppConfig, options: Partial<DaemonOptions> = {}) {
  const daemon = createDaemon(config, options);
  const work = (async () => {
    try {
      return await daemon.runOnce(30_000);
    } finally {
      await daemon.stop();
    }
  })();
  return options.clock instanceof ManualClock ? withVirtualTime(options.clock, work) : work;
}

/** A clock for simulator and daemon alike, starting on a whole second as the Date header does. */
export function testClock(): ManualClock {
  return new ManualClock(Date.UTC(2026, 10, 22, 12, 0, 0));
}

/** The event ids the daemon must emit for what the simulator shows now (optionally since a time). */
export function expectedEventIds(simulator: SimulatedCompany, since = Number.NEGATIVE_INFINITY): string[] {
  return simulator
    .visibleEntries()
    .filter(({ entry }) => typeof entry.performedAt !== 'string' || Date.parse(entry.performedAt) >= since)
    .map(({ log, objectId, entry }) => eventIdFor(log, objectId ?? '', entry.id as string));
}

export function deliveredEvents(stateDir: string, file = 'events.jsonl', options: { whileWritten?: boolean } = {}) {
  return readJsonLines<{ id: string; type: string; subject?: string; time?: string; data: Record<string, unknown> }>(
    join(stateDir, file),
    options,
  );
}

/** The events a running daemon's file sink has written whole so far, to wait on (readJsonLines' whileWritten). */
export function deliveredSoFar(stateDir: string, file = 'events.jsonl') {
  return deliveredEvents(stateDir, file, { whileWritten: true });
}

/** Ids that occur more than once. */
export function duplicatesOf(ids: readonly string[]): string[] {
  const seen = new Set<string>();
  const dupes = new Set<string>();
  for (const id of ids) (seen.has(id) ? dupes : seen).add(id);
  return [...dupes];
}
