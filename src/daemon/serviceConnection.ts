import type { Logger } from 'pino';
import type { ApiKeyProvider } from '../api/apiKeyProvider.js';
import type { ResponseMeta } from '../api/responseHeaders.js';
import { ServiceClient } from '../api/serviceClient.js';
import { serviceUserAgent } from '../api/userAgent.js';
import type { Clock } from '../clock.js';
import type { AppConfig } from '../config/appConfigSchema.js';
import type { ReadBudget } from '../poll/readBudget.js';
import type { ServerClock } from '../poll/serverClock.js';
import { ConfigError } from '../errors.js';
import { PEM_FILE_MAX_BYTES, PlainFileError, readPlainFile } from '../readPlainFile.js';

/**
 * The client every command uses: requests carry this replica's User-Agent and are paced by the
 * read budget, and every response updates the budget, the service clock, and (on 401) makes a key
 * file be read again.
 */
export function createServiceClient(
  config: Pick<AppConfig, 'api' | 'cluster'>,
  deps: {
    apiKey: ApiKeyProvider;
    clock: Clock;
    logger: Logger;
    budget: ReadBudget;
    serverClock: ServerClock;
    onResponse?: (meta: ResponseMeta, path: string) => void;
    /** Called right before each request leaves (ServiceClientOptions.requestGuard). */
    requestGuard?: () => void;
  },
): ServiceClient {
  const apiKey = deps.apiKey;
  return new ServiceClient({
    baseUrl: config.api.baseUrl,
    apiKey: () => apiKey.current(),
    credentialSource: apiKey.source,
    userAgent: serviceUserAgent(config.cluster.instanceId),
    timeoutMs: config.api.timeoutMs,
    ...(config.api.caFile ? { ca: readCaFile(config.api.caFile) } : {}),
    maxResponseBytes: config.api.maxResponseBytes,
    maxEntryBytes: config.api.maxEntryBytes,
    clock: deps.clock,
    logger: deps.logger,
    ...(deps.requestGuard ? { requestGuard: deps.requestGuard } : {}),
    gate: {
      acquire: (priority, signal) => deps.budget.acquire(priority, signal),
      observe: (meta, path) => {
        deps.budget.observe(meta);
        deps.serverClock.observe(meta);
        deps.onResponse?.(meta, path);
      },
    },
  });
}

export async function pingService(client: ServiceClient, signal?: AbortSignal): Promise<void> {
  await client.getJson('/api/v1/ping', {}, 'identity_provider', signal);
}

function readCaFile(file: string): string {
  let pem: string;
  try {
    pem = readPlainFile(file, PEM_FILE_MAX_BYTES);
  } catch (error) {
    if (!(error instanceof PlainFileError)) throw error;
    throw new ConfigError(`api.caFile ${file} cannot be read (${error.brief})`);
  }
  // Node ignores a CA list without certificates; every request would then fail as "unable to get
  // local issuer certificate", pointing at the service rather than at this file.
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw new ConfigError(`api.caFile ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return pem;
}
