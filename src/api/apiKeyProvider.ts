import { statSync } from 'node:fs';
import { readSecretFile } from '../secrets/readSecretFile.js';
import { registerSecret } from '../secrets/secretRegistry.js';
import type { ApiConfig } from './apiConfig.js';

export interface ApiKeyProvider {
  /** The key to send now. */
  current(): string;
  /** Where it comes from, for error messages; never the key itself. */
  readonly source: string;
  /**
   * True when the key file was replaced since the key last sent was read from it (a rotation):
   * after a 401 the caller then retries at once instead of waiting out its backoff. Cheap (a stat).
   */
  hasChanged(): boolean;
}

/**
 * Supplies the API key. A key file is re-read when its identity or modification time changes,
 * which catches a Kubernetes secret update (an atomic symlink swap) on the next request.
 * Every key value seen is registered as a secret, so no log line can carry it.
 */
export function createApiKeyProvider(api: ApiConfig, env: NodeJS.ProcessEnv = process.env): ApiKeyProvider {
  if (api.apiKey !== undefined) {
    registerSecret(api.apiKey);
    const source = env.CHANGEFEED_API_KEY === api.apiKey ? 'CHANGEFEED_API_KEY' : 'api.apiKey in the config';
    return { current: () => api.apiKey as string, source, hasChanged: () => false };
  }
  const file = api.apiKeyFile as string;
  let cached: { key: string; stamp: string } | undefined;
  const stampOf = (): string => {
    try {
      const s = statSync(file);
      return `${s.ino}:${s.mtimeMs}:${s.size}`;
    } catch {
      return 'missing';
    }
  };
  return {
    source: `the key file ${file} (api.apiKeyFile)`,
    current: () => {
      const stamp = stampOf();
      if (cached?.stamp !== stamp) {
        const key = readSecretFile(file);
        registerSecret(key);
        cached = { key, stamp };
      }
      return cached.key;
    },
    hasChanged: () => cached !== undefined && stampOf() !== cached.stamp,
  };
}
