import { statSync } from 'node:fs';
import { readSecretFile } from '../secrets/readSecretFile.js';
import { registerSecret } from '../secrets/secretRegistry.js';
import type { ApiConfig } from './apiConfig.js';
import { keyFingerprint } from './apiKeyFingerprint.js';

export interface ApiKeyProvider {
  /** The key to send now. */
  current(): string;
  /** Where it comes from, for error messages; never the key itself. */
  readonly source: string;
  /**
   * True when the key it would send now is another than the one whose fingerprint was rejected
   * (ApiProblemError.rejectedKey): the key file was rotated since that request left, so a 401
   * waits out no pause. Compared with the rejected key, not with the last key read: a request sent
   * after the rotation reads the new key before the rejection of the old one arrives. A stat, and
   * a read and a hash only when the file changed.
   */
  replaces(rejectedKey: string | undefined): boolean;
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
    const fingerprint = keyFingerprint(api.apiKey);
    return {
      current: () => api.apiKey as string,
      source,
      replaces: (rejected) => rejected !== undefined && rejected !== fingerprint,
    };
  }
  const file = api.apiKeyFile as string;
  let cached: { key: string; stamp: string; fingerprint: string } | undefined;
  const stampOf = (): string => {
    try {
      const s = statSync(file);
      return `${s.ino}:${s.mtimeMs}:${s.size}`;
    } catch {
      return 'missing';
    }
  };
  const read = (): { key: string; fingerprint: string } => {
    const stamp = stampOf();
    if (cached?.stamp !== stamp) {
      const key = readSecretFile(file);
      registerSecret(key);
      cached = { key, stamp, fingerprint: keyFingerprint(key) };
    }
    return cached;
  };
  return {
    source: `the key file ${file} (api.apiKeyFile)`,
    current: () => read().key,
    replaces: (rejected) => {
      if (rejected === undefined) return false;
      try {
        return read().fingerprint !== rejected;
      } catch {
        // A key file gone or empty holds no key to try: the pause stands (the poll says why).
        return false;
      }
    },
  };
}
