import { readFileSync } from 'node:fs';

/**
 * The version of changefeed running, read once from package.json, the one place it is written:
 * shown by `changefeed --version`, sent in the User-Agent and exported as `changefeed_build_info`.
 * The Dockerfile's `org.opencontainers.image.version` label repeats it (a test keeps them equal).
 * From src/ and dist/ alike, package.json is one folder up.
 */
export const CHANGEFEED_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
