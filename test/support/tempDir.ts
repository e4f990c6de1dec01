import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A directory made inside a test lives until that test ends; one made in beforeAll or at a file's
// top level lives until the file ends, since the daemon or browser the hook started keeps writing
// to it (removing it after the first test raced their writes: ENOTEMPTY).
const madeInTest: string[] = [];
const madeForFile: string[] = [];
let inTest = false;

function remove(dirs: string[]): void {
  const doomed = dirs.splice(0);
  if (process.env.KEEP_TEMP) return;
  for (const dir of doomed) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** test/testCleanup.ts calls this before each test: directories made from now on are the test's. */
export function testStarted(): void {
  inTest = true;
}

/** Removes the directories the test that just ended made. */
export function removeTestTempDirs(): void {
  inTest = false;
  remove(madeInTest);
}

/** Removes the directories made outside any test (beforeAll, top level) once the file is done. */
export function removeFileTempDirs(): void {
  remove(madeForFile);
}

/** A fresh directory under the OS temp dir, removed after the test (or the file) that made it. */
export function makeTempDir(prefix = 'changefeed-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  (inTest ? madeInTest : madeForFile).push(dir);
  return dir;
}
