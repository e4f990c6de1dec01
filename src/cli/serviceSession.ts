import { createApiKeyProvider } from '../api/apiKeyProvider.js';
import type { ServiceClient } from '../api/serviceClient.js';
import { createServiceClient } from '../daemon/serviceConnection.js';
import { systemClock } from '../clock.js';
import type { AppConfig } from '../config/appConfigSchema.js';
import { createLogger } from '../observe/createLogger.js';
import { ReadBudget } from '../poll/readBudget.js';
import { ServerClock } from '../poll/serverClock.js';

/** A service client for a one-shot command, counting the requests it spends from the key's bucket. */
export interface ServiceSession {
  client: ServiceClient;
  /** Requests answered so far: each costs one from the bucket of the key. */
  requests(): number;
  /** "3 requests of the 1000/h bucket" for the command's report. */
  describeSpend(): string;
  close(): Promise<void>;
}

/** `env` tells where the key came from, for the advice a rejected key gets. */
export function openServiceSession(
  config: Pick<AppConfig, 'api' | 'cluster' | 'budget'>,
  env: NodeJS.ProcessEnv,
): ServiceSession {
  let requests = 0;
  const client = createServiceClient(config, {
    apiKey: createApiKeyProvider(config.api, env),
    clock: systemClock,
    logger: createLogger({ level: 'silent' }),
    budget: new ReadBudget(config.budget, systemClock),
    serverClock: new ServerClock(systemClock, { toleranceMs: config.api.clockToleranceSeconds * 1000 }),
    onResponse: () => requests++,
  });
  return {
    client,
    requests: () => requests,
    describeSpend: () =>
      `${requests} request${requests === 1 ? '' : 's'} of the key's ${config.budget.readsPerHour}/h bucket`,
    close: () => client.close(),
  };
}
