import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/** A fresh temp directory per test, removed afterwards; `write` puts a file in it. */
export function useTempDir(): { write(name: string, content: string): Promise<string>; path(name: string): string } {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });
  const ensure = async (): Promise<string> => (dir ??= await mkdtemp(join(tmpdir(), 'changefeed-config-')));
  return {
    async write(name, content) {
      const file = join(await ensure(), name);
      await writeFile(file, content);
      return file;
    },
    path(name) {
      if (!dir) throw new Error('write a file first');
      return join(dir, name);
    },
  };
}
