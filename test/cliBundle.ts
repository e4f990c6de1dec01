import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import type { TestProject } from 'vitest/node';

const ROOT = join(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

declare module 'vitest' {
  export interface ProvidedContext {
    /** The path of `src/cli/changefeed.ts` bundled into one plain JavaScript file for this run. */
    changefeedBundle: string;
  }
}

/**
 * Each file of src/ keeps its own `import.meta.url`: the console's assets, the demo config and
 * package.json are found relative to the source file that names them, not to the bundle.
 */
const ownImportMeta: Plugin = {
  name: 'own-import-meta',
  setup(bundler) {
    bundler.onLoad({ filter: /\.ts$/ }, (file) => {
      if (!file.path.startsWith(SRC)) return undefined;
      const url = JSON.stringify(pathToFileURL(file.path).href);
      return { contents: readFileSync(file.path, 'utf8').replaceAll('import.meta.url', url), loader: 'ts' };
    });
  },
};

/**
 * Vitest's global setup: bundles the CLI once per run, so a test that spawns `changefeed` starts
 * plain `node` (about 1 s of CPU) instead of tsx compiling every source file again (about 3 s).
 * Packages stay external and resolve from node_modules, hence a directory inside the checkout
 * (test-results/ is ignored by git), one per run so that two runs never share a bundle.
 */
export default async function bundleCli(project: TestProject): Promise<() => void> {
  mkdirSync(join(ROOT, 'test-results'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, 'test-results', 'cli-'));
  await build({
    entryPoints: [join(SRC, 'cli', 'changefeed.ts')],
    outdir: dir,
    // A module src/ imports on demand (the PostgreSQL engine, src/loadOnDemand.ts) becomes a chunk
    // of its own, loaded as the compiled CLI loads it: in one file, its imports would load at start.
    splitting: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    plugins: [ownImportMeta],
    logLevel: 'error',
  });
  project.provide('changefeedBundle', join(dir, 'changefeed.js'));
  return () => rmSync(dir, { recursive: true, force: true });
}
