import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AppConfig } from '../../src/config/appConfigSchema.js';
import { createServiceClient } from '../../src/daemon/serviceConnection.js';
import { PEM_FILE_MAX_BYTES } from '../../src/readPlainFile.js';
import { runBundledScript } from '../support/bundledScript.js';
import { makeTempDir } from '../support/tempDir.js';

/** A FIFO in a fresh directory, nothing ever writing to it. */
function fifo(name: string): string {
  const path = join(makeTempDir(), name);
  execFileSync('mkfifo', [path]);
  return path;
}

/** What `call` (run in a child, after `imports`) threw, or `made`: a FIFO must not block this process. */
async function inChild(imports: string, call: string): Promise<string> {
  const child = await runBundledScript(`${imports}
    try { ${call}; console.log('made'); } catch (error) { console.log(error.code + ': ' + error.message); }`);
  if (child.stdout) return child.stdout;
  const ended = child.error?.message ?? (child.signal ? `killed by ${child.signal}` : `exit ${child.status}`);
  return `(the child said nothing: ${ended}; stderr: ${JSON.stringify(child.stderr)})`;
}

// Before the fix each read waited for a writer for ever: `check` hung, and a SIGHUP reload or a
// sink's reconnect (which reads the files again) froze the daemon, signals included.
describe('a TLS file that is a FIFO', () => {
  it("is refused as a sink's caFile, naming the sink, field and file", async () => {
    const ca = fifo('ca.pem');
    expect(
      await inChild(
        `import { readTlsFiles } from './src/tlsFiles.ts';`,
        `readTlsFiles({ name: 'dest', caFile: ${JSON.stringify(ca)} })`,
      ),
    ).toBe(`CONFIG_INVALID: sinks "dest": caFile ${ca} cannot be read (it is a FIFO, not a plain file)\n`);
  });

  it("is refused as the postgres sink's sslrootcert, naming the parameter", async () => {
    const ca = fifo('root.crt');
    const url = `postgres://changefeed@127.0.0.1:9/db?sslmode=verify-full&sslrootcert=${ca}`;
    expect(
      await inChild(
        `import { PostgresSink } from './src/sinks/postgresSink.ts';
        import { postgresSinkConfigSchema } from './src/sinks/postgresSinkConfig.ts';`,
        `new PostgresSink(postgresSinkConfigSchema.parse({ name: 'pg', type: 'postgres', url: ${JSON.stringify(url)} }))`,
      ),
    ).toBe(`CONFIG_INVALID: sinks "pg": sslrootcert=${ca} in url cannot be read (it is a FIFO, not a plain file)\n`);
  });
});

describe('a TLS file past the bound', () => {
  it('is refused as api.caFile, naming the field and file, before a CA bundle of it is built', () => {
    const ca = join(makeTempDir(), 'service-ca.pem');
    writeFileSync(ca, `-----BEGIN CERTIFICATE-----\n${'A'.repeat(PEM_FILE_MAX_BYTES)}\n`);
    const config = { api: { baseUrl: 'https://127.0.0.1:9', caFile: ca, timeoutMs: 1000 }, cluster: {} } as AppConfig;
    const deps = { apiKey: { current: () => 'k', source: 'a test' } } as Parameters<typeof createServiceClient>[1];
    expect(() => createServiceClient(config, deps)).toThrow(
      `api.caFile ${ca} cannot be read (it holds more than ${PEM_FILE_MAX_BYTES} bytes)`,
    );
  });
});
