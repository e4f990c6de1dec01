import { afterEach } from 'vitest';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { defineIngestContract } from './contract/ingestContract.js';
import { defineJournalContract } from './contract/journalContract.js';
import { defineOutboxContract } from './contract/outboxContract.js';
import { defineStateContract } from './contract/stateContract.js';
import { HOUR, T } from './contract/storeFixtures.js';

export { entry, ingest, T } from './contract/storeFixtures.js';

/** A fresh, empty store of the implementation under test, and how to open it again or throw it away. */
export interface StoreUnderTest {
  store: ChangefeedStore;
  /** Closes the store and opens the same one again. */
  reopen(): Promise<ChangefeedStore>;
  cleanup(): Promise<void>;
}

/**
 * The store contract (src/store/changefeedStore.ts) as behaviour, run against every
 * implementation: test/store/sqliteStore.test.ts and test/store/postgresStore.test.ts.
 * `factory` gives a fresh, empty store per test.
 */
export function defineStoreContractTests(factory: () => Promise<StoreUnderTest>): void {
  const opened: StoreUnderTest[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0).reverse()) await s.cleanup();
  });

  /** A fresh store with `sinks` active and the career log c-1 watched. */
  async function openFresh(sinks: string[] = ['a']): Promise<StoreUnderTest & { store: ChangefeedStore }> {
    const underTest = await factory();
    opened.push(underTest);
    const { store } = underTest;
    await store.sinks.activate(
      sinks.map((name) => ({ name, type: 'file' })),
      T,
    );
    await store.watchedLogs.register({
      log: 'career',
      objectId: 'c-1',
      origin: 'config',
      coverageStart: T - HOUR,
      now: T,
    });
    return underTest;
  }

  defineIngestContract(openFresh);
  defineOutboxContract(openFresh);
  defineStateContract(openFresh);
  defineJournalContract(openFresh);
}
