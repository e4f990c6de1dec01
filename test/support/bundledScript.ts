import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { join } from 'node:path';
import { build } from 'esbuild';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * Runs `source`, TypeScript that imports files of the checkout by paths relative to its root, in a
 * child `node` of its own: for tests whose point is a fresh process (its signals, its exit code,
 * V8 flags set before anything ran). esbuild bundles the source files it imports into the script
 * in milliseconds; `node --import tsx` compiled them at every start (2-3 s of CPU). Packages stay
 * external and resolve from the checkout's node_modules.
 */
export async function runBundledScript(source: string, timeoutMs = 60_000): Promise<SpawnSyncReturns<string>> {
  const bundled = await build({
    stdin: { contents: source, loader: 'ts', resolveDir: ROOT, sourcefile: 'script.ts' },
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'error',
  });
  return spawnSync(process.execPath, ['--input-type=module', '-e', bundled.outputFiles[0]!.text], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: timeoutMs,
  });
}
