import { renameSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiProblemError } from '../../src/api/apiErrors.js';
import { keyFingerprint } from '../../src/api/apiKeyFingerprint.js';
import { createApiKeyProvider } from '../../src/api/apiKeyProvider.js';
import { systemClock } from '../../src/clock.js';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import { createServiceClient } from '../../src/daemon/serviceConnection.js';
import { PollFailures } from '../../src/poll/pollFailures.js';
import { ReadBudget } from '../../src/poll/readBudget.js';
import { ServerClock } from '../../src/poll/serverClock.js';
import type { ChangefeedStore } from '../../src/store/changefeedStore.js';
import type { WatchedLog } from '../../src/store/storeRecords.js';
import { noopLogger } from '../support/noopLogger.js';
import { makeTempDir } from '../support/tempDir.js';

const OLD_KEY = `sim_live_${'O'.repeat(32)}`;
const NEW_KEY = `sim_live_${'N'.repeat(32)}`;

/**
 * A service that accepts only NEW_KEY, and holds its answer to the first request until told, so
 * a rotation can happen while that request is out.
 */
let held: ServerResponse | undefined;
let heldArrived: () => void = () => undefined;
const server = createServer((req, res) => {
  const accepted = req.headers.authorization === `Bearer ${NEW_KEY}`;
  if (!accepted && held === undefined) {
    held = res;
    heldArrived();
    return;
  }
  res
    .writeHead(accepted ? 200 : 401, { 'content-type': 'application/json' })
    .end(accepted ? '{"data":[]}' : '{"title":"Unauthorized","status":401}');
});
let baseUrl = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('a key file rotated while a request with the old key is out', () => {
  it('ends the pause for the rejected key, though a later request already read the new one', async () => {
    const dir = makeTempDir();
    const keyFile = join(dir, 'api-key');
    writeFileSync(keyFile, OLD_KEY);
    const config = appConfigSchema.parse({
      api: { baseUrl, apiKeyFile: keyFile },
      sinks: [{ name: 'file', type: 'file', path: join(dir, 'events.jsonl') }],
      stateDir: dir,
    });
    const apiKey = createApiKeyProvider(config.api, {});
    const client = createServiceClient(config, {
      apiKey,
      clock: systemClock,
      logger: noopLogger,
      budget: new ReadBudget(config.budget, systemClock),
      serverClock: new ServerClock(systemClock, { toleranceMs: 300_000 }),
    });
    try {
      const arrived = new Promise<void>((resolve) => (heldArrived = resolve));
      const withOldKey = client.getJson('/api/v1/careers/c-1/activity', {}, 'poll').then(
        () => undefined,
        (error: unknown) => error,
      );
      await arrived;
      // The rotation (an atomic swap, as a Kubernetes secret update is), then a request with the new key.
      writeFileSync(join(dir, 'api-key.next'), NEW_KEY);
      renameSync(join(dir, 'api-key.next'), keyFile);
      await client.getJson('/api/v1/careers/c-2/activity', {}, 'poll');
      held!.writeHead(401, { 'content-type': 'application/json' }).end('{"title":"Unauthorized","status":401}');
      const rejection = await withOldKey;
      expect(rejection).toBeInstanceOf(ApiProblemError);
      expect((rejection as ApiProblemError).code).toBe('API_INVALID_CREDENTIAL');

      const failures = new PollFailures({
        store: { watchedLogs: { recordFailure: () => Promise.resolve() } } as unknown as ChangefeedStore,
        logger: noopLogger,
        credentialChanged: (rejectedKey) => apiKey.replaces(rejectedKey),
      });
      const watched = { log: 'career', objectId: 'c-1', consecutiveFailures: 0 } as unknown as WatchedLog;
      await failures.failed(watched, rejection, 1_000);
      // No key-wide pause: the key that was rejected is not the one the file holds now.
      expect(failures.pause(1_000)).toBeUndefined();
      // A rejection of the key the file holds now would pause: only another rotation ends it early.
      expect(apiKey.replaces(keyFingerprint(NEW_KEY))).toBe(false);
    } finally {
      await client.close();
    }
  });
});
