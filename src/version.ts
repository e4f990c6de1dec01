import { readFileSync } from 'node:fs';

/**
 * The version of changefeed, read once from package.json: `--version` and `changefeed_build_info`
 * show the same. From src/ and dist/ alike, package.json is one folder up.
 */
export const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
