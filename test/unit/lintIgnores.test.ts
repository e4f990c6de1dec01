import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

// ESLint's flat config does not read .gitignore. The CLI bundle a test run leaves under
// test-results/ (one that was interrupted, or still running beside `npm run lint`) failed the lint:
// a JavaScript file outside every TypeScript project.
describe('npm run lint', () => {
  it.each(['test-results/cli-AbCdEf/changefeed.js', 'dist/cli/changefeed.js', 'coverage/prettify.js'])(
    'leaves %s alone, as git does',
    async (path) => {
      expect(await new ESLint({ cwd: ROOT }).isPathIgnored(join(ROOT, path))).toBe(true);
    },
  );
});
