import { createHash } from 'node:crypto';
import { readSecretFile } from '../secrets/readSecretFile.js';
import type { ApiConfig } from './apiConfig.js';

/**
 * sha256 (hex) of the key a config sends: `api.apiKey`, or the content of `api.apiKeyFile` as
 * the key provider reads it. Tells two tenants' keys apart without keeping either. Throws the
 * ConfigError of readSecretFile (naming the file, never its content) when the file cannot be read.
 */
export function apiKeyFingerprint(api: Pick<ApiConfig, 'apiKey' | 'apiKeyFile'>): string {
  return keyFingerprint(api.apiKey ?? readSecretFile(api.apiKeyFile ?? ''));
}

/** sha256 (hex) of a key: what tells keys apart where the key itself may not be kept. */
export function keyFingerprint(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}
