import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createApiKeyProvider } from '../../src/api/apiKeyProvider.js';
import { systemClock } from '../../src/clock.js';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { createServiceClient } from '../../src/daemon/serviceConnection.js';
import { ConfigError } from '../../src/errors.js';
import { noopLogger } from '../support/noopLogger.js';
import { ReadBudget } from '../../src/poll/readBudget.js';
import { ServerClock } from '../../src/poll/serverClock.js';
import { makeTempDir } from '../support/tempDir.js';

function clientWithCaFile(caFile: string) {
  const stateDir = makeTempDir();
  const config = appConfigSchema.parse({
    api: { baseUrl: 'https://127.0.0.1:1', apiKey: 'k_test_0123456789abcdef0123456789abcdef', caFile },
    sinks: [{ name: 'file', type: 'file', path: join(stateDir, 'events.jsonl') }],
    stateDir,
  });
  return () =>
    createServiceClient(config, {
      apiKey: createApiKeyProvider(config.api, {}),
      clock: systemClock,
      logger: noopLogger,
      budget: new ReadBudget(config.budget, systemClock),
      serverClock: new ServerClock(systemClock, { toleranceMs: 300_000 }),
    });
}

describe('api.caFile', () => {
  it('refuses at start a file that holds no certificate, naming the field', () => {
    const file = join(makeTempDir(), 'ca.pem');
    writeFileSync(file, 'MIIB... pasted without its BEGIN line\n');
    expect(clientWithCaFile(file)).toThrow(ConfigError);
    expect(clientWithCaFile(file)).toThrow(`api.caFile ${file} holds no PEM certificate`);
    expect(clientWithCaFile(join(makeTempDir(), 'absent.pem'))).toThrow(/api.caFile .* cannot be read \(ENOENT\)/);
  });
});
