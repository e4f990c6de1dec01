import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { prefilledStore } from '../support/prefilledStore.js';
import { makeTempDir } from '../support/tempDir.js';

// Each command needs the secrets of the sections it uses, and runs where the others are not
// mounted: the key (API_KEY), the feed's tokens (FEED_TOKEN), a webhook sink's secret (HOOK_SECRET).
describe('the secrets each command loads', () => {
  it('runs every command with the secrets of the sections it does not use unset', async () => {
    const dir = makeTempDir();
    const { store } = await prefilledStore(5, [{ name: 'out', type: 'file' }], 1, dir);
    await store.close();
    const config = join(dir, 'changefeed.yaml');
    writeFileSync(
      config,
      [
        'api: { baseUrl: "http://127.0.0.1:9", apiKey: "${API_KEY}" }',
        `stateDir: ${dir}`,
        'feed: { enabled: true, port: 9999, tokens: ["${FEED_TOKEN}"] }',
        'sinks:',
        `  - { name: out, type: file, path: ${join(dir, 'out.jsonl')} }`,
        '  - { name: hook, type: webhook, url: "http://127.0.0.1:9/hook", secret: "${HOOK_SECRET}" }',
      ].join('\n'),
    );
    const API_KEY = 'skl_test_key_0123456789';
    const HOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const run = async (args: string[], env: Record<string, string> = {}) => {
      const out = await runCli([...args, '--config', config], env);
      expect(out.stderr, args.join(' ')).not.toContain('invalid configuration');
      return out;
    };

    // Read the store only: no secret at all.
    expect((await run(['status'])).status).toBe(0);
    expect((await run(['dead-letters', 'list'])).status).toBe(0);
    expect((await run(['plan', '--no-discover'])).status).toBe(0);
    // Opens the sinks, not the service nor the feed.
    const replay = await run(['replay', '--sink', 'out', '--since', '2000-01-01T00:00:00Z', '--queue-only'], {
      HOOK_SECRET,
    });
    expect(replay.status, replay.stderr).toBe(0);
    // Calls the service, opens no sink.
    const watch = await run(['watch', 'retry', 'career', 'car_0'], { API_KEY });
    expect(watch.stdout).toContain('car_0');

    // `check` checks everything a daemon reads: each secret it lacks is named.
    const check = await runCli(['check', '--config', config], { API_KEY, HOOK_SECRET });
    expect(check.status).toBe(2);
    expect(check.stderr).toContain('FEED_TOKEN is not set');
  });
});
