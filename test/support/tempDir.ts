import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const created: string[] = [];

/** Removes the directories made since the last call (test/removeTempDirs.ts calls it after each test). */
export function removeTempDirs(): void {
  if (process.env.KEEP_TEMP) return;
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A fresh directory under the OS temp dir, removed after the test. */
export function makeTempDir(prefix = 'changefeed-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}
