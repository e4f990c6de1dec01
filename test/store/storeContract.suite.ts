import { afterEach } from 'vitest';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import { openStoreBackend } from '../../src/store/openStoreBackend.js';
import type { OpenStoreOptions, StoreBackend, TenantStoreOptions } from '../../src/store/storeBackend.js';
import type { StoreConfig } from '../../src/store/storeConfig.js';
import { defineCoverageContract } from './contract/coverageContract.js';
import { defineIngestContract } from './contract/ingestContract.js';
import { defineJournalContract } from './contract/journalContract.js';
import { defineOutboxContract } from './contract/outboxContract.js';
import { defineStateContract } from './contract/stateContract.js';
import { HOUR, T } from './contract/storeFixtures.js';
import { defineWriteContract } from './contract/writeContract.js';

export { entry, ingest, T } from './contract/storeFixtures.js';

/** The tenant whose store every contract test opens. */
export const CONTRACT_TENANT = 'acme';

/** Where the engine under test keeps a fresh store that does not exist yet: what `run` is configured with. */
export type StoreSettings = { stateDir: string; store: StoreConfig };

/**
 * The engine under test, opened as the product opens it (openStoreBackend), each backend closed
 * after the test.
 */
export interface EngineUnderTest {
  readonly settings: StoreSettings;
  open(options?: OpenStoreOptions): Promise<StoreBackend>;
  /** A new backend with `options`, and the contract tenant's store on it. */
  openStore(options?: OpenStoreOptions, tenant?: TenantStoreOptions): Promise<ChangefeedStore>;
}

export type OpenEngine = () => EngineUnderTest;

/**
 * Moves the journal of `tenant` on by `positions` unused seqs, as rolled-back ingests leave
 * them on PostgreSQL: a journal that spans many windows of positions without holding that many
 * events (each engine numbers them its own way, so each test file says how).
 */
export type SkipJournalPositions = (settings: StoreSettings, tenant: string, positions: number) => Promise<void> | void;

/**
 * Makes the engine refuse every write of a tenant's re-queue count (`meta`, REQUEUE_COUNT_KEY), as
 * a crash or a refused statement between a re-queue and its count would: a trigger, in each
 * engine's own dialect.
 */
export type RefuseRequeueCounts = (settings: StoreSettings) => Promise<void> | void;

/**
 * The store contract (src/store/changefeedStore.ts, storeBackend.ts) as behaviour, run against
 * every engine: test/store/sqliteStore.test.ts and test/store/postgresStore.test.ts. `settings`
 * gives the settings of a fresh store per test.
 */
export function defineStoreContractTests(
  settings: () => StoreSettings,
  skipJournalPositions: SkipJournalPositions,
  refuseRequeueCounts: RefuseRequeueCounts,
): void {
  const backends: StoreBackend[] = [];
  afterEach(async () => {
    for (const backend of backends.splice(0).reverse()) await backend.close();
  });

  const openEngine: OpenEngine = () => {
    const fresh = settings();
    const open = async (options?: OpenStoreOptions): Promise<StoreBackend> => {
      const backend = await openStoreBackend(fresh, options);
      backends.push(backend);
      return backend;
    };
    return {
      settings: fresh,
      open,
      openStore: async (options, tenant) => (await open(options)).tenantStore(CONTRACT_TENANT, tenant),
    };
  };

  /** A fresh store with `sinks` active and the career log c-1 watched. */
  async function openFresh(sinks: string[] = ['a']) {
    const engine = openEngine();
    let backend = await engine.open();
    const store = await backend.tenantStore(CONTRACT_TENANT);
    await store.sinks.activate(
      sinks.map((name) => ({ name, type: 'file' })),
      T,
    );
    await store.watchedLogs.registerAll([
      { log: 'career', objectId: 'c-1', origin: 'config', coverageStart: T - HOUR, now: T },
    ]);
    return {
      store,
      skipJournalPositions: async (positions: number) => {
        await skipJournalPositions(engine.settings, CONTRACT_TENANT, positions);
      },
      refuseRequeueCounts: async () => {
        await refuseRequeueCounts(engine.settings);
      },
      reopen: async () => {
        await backend.close();
        backend = await engine.open();
        return backend.tenantStore(CONTRACT_TENANT);
      },
    };
  }

  defineIngestContract(openFresh);
  defineOutboxContract(openFresh);
  defineStateContract(openFresh);
  defineJournalContract(openFresh);
  defineWriteContract(openEngine);
  defineCoverageContract(openEngine);
}
