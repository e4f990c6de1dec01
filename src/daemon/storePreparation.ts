import type { Logger } from 'pino';
import type { AppConfig } from '../config/appConfigSchema.js';
import type { ChangefeedStore } from '../store/changefeedStore.js';

/**
 * Brings the store in line with the configuration before polling starts: a sink seen for the
 * first time starts from now (or from the journal, with `startFrom: journal`), and logs an
 * earlier run disabled (missing scope, a rejected request) get another chance.
 */
export async function prepareStore(
  store: ChangefeedStore,
  config: AppConfig,
  now: number,
  logger: Logger,
): Promise<void> {
  const added = await store.sinks.activate(
    config.sinks.map((s) => ({ name: s.name, type: s.type })),
    now,
  );
  for (const name of added) {
    const fromJournal = config.sinks.find((s) => s.name === name)?.startFrom === 'journal';
    const queued = fromJournal ? await store.outbox.enqueueFromJournal(name, {}, now) : 0;
    logger.info({ sink: name, queued }, fromJournal ? 'new sink starts from the journal' : 'new sink starts from now');
  }
  for (const w of await store.watchedLogs.list()) {
    if (w.status === 'disabled') await store.watchedLogs.setStatus(w.log, w.objectId, 'active', null);
  }
}
