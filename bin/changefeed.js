#!/usr/bin/env node
// Runs the compiled CLI (npm run build). During development use `npm run changefeed -- <command>`.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/changefeed.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    'changefeed: dist/ is missing; run `npm run build` first (or `npm run changefeed -- <command>`)\n',
  );
  process.exit(1);
}
await import(entry.href);
