import type { Server } from 'node:http';

// The servers a support module starts for a test are closed after it by the setup file
// (test/testCleanup.ts), not by an afterEach the module registers when first imported: files that
// share their modules (isolate: false in vitest.config.ts) import it once per worker, so such a
// hook would close only the first file's servers.
const closers: (() => Promise<void>)[] = [];
const fileClosers: (() => Promise<void>)[] = [];

/** Has `close` run after the current test (or, when called from beforeAll, after the file's first test). */
export function closeAfterTest(close: () => Promise<void>): void {
  closers.push(close);
}

/** Closes an HTTP server and its open connections after the current test. */
export function closeServerAfterTest(server: Server): void {
  closeAfterTest(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
}

/** Runs what closeAfterTest collected, in the order it came. */
export async function closeTestResources(): Promise<void> {
  for (const close of closers.splice(0)) await close();
}

/** Has `close` run once the current file is done: for what a file makes once and shares between its tests. */
export function closeAfterFile(close: () => Promise<void>): void {
  fileClosers.push(close);
}

/** Runs what closeAfterFile collected, the last first: a server goes before the directory it was started in. */
export async function closeFileResources(): Promise<void> {
  for (const close of fileClosers.splice(0).reverse()) await close();
}
