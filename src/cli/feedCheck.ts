import type { AppConfig } from '../config/appConfigSchema.js';
import { readSecretFile } from '../secrets/readSecretFile.js';
import { describeError } from '../errors.js';
import type { CheckResult } from './checkResult.js';

/** Whether the pull feed can start as configured: a port to serve on and readable tokens. */
export function checkFeed(config: AppConfig): CheckResult | undefined {
  const feed = config.feed;
  if (!feed.enabled) return undefined;
  const name = 'feed';
  if (config.http.port === null)
    return {
      name,
      ok: false,
      detail: 'feed.enabled but the HTTP server is off',
      fix: 'set http.port (or CHANGEFEED_HTTP_PORT)',
    };
  try {
    const tokens = feed.tokens.length + feed.tokenFiles.map((file) => readSecretFile(file)).length;
    if (tokens === 0)
      return { name, ok: false, detail: 'no bearer token', fix: 'add one to feed.tokens or feed.tokenFiles' };
    return {
      name,
      ok: true,
      detail: `/v1/events and /v1/events/stream on ${config.http.host}:${config.http.port}, ${tokens} token${tokens === 1 ? '' : 's'}`,
    };
  } catch (error) {
    return { name, ok: false, detail: describeError(error), fix: 'check the paths in feed.tokenFiles' };
  }
}
