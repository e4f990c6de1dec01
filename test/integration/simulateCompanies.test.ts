import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/daemonProcess.js';
import { startCliInProcess, type InProcessCommand } from '../support/runCli.js';

const running: InProcessCommand[] = [];
afterEach(async () => {
  for (const command of running.splice(0)) expect(await command.stop()).toBe(0);
});

/** `changefeed simulate` in this process; resolves with what it printed once `ready` holds. */
async function simulate(args: string[], ready: (stdout: string) => boolean): Promise<string> {
  const command = startCliInProcess(['simulate', ...args]);
  running.push(command);
  await until(() => ready(command.stdout()), 30_000, 'the simulator to print its keys');
  return command.stdout();
}

const keyLines = (stdout: string) => [...stdout.matchAll(/^company (\d+) CHANGEFEED_API_KEY=(\S+)$/gm)];

describe('changefeed simulate --companies', () => {
  it('prints one key per company, and each key reads its own company', async () => {
    const stdout = await simulate(
      ['--port', '0', '--companies', '3', '--careers', '2', '--skills', '1'],
      (out) => keyLines(out).length === 3,
    );
    const baseUrl = /^CHANGEFEED_BASE_URL=(\S+)$/m.exec(stdout)?.[1];
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(stdout).not.toMatch(/^CHANGEFEED_API_KEY=/m);
    const keys = keyLines(stdout).map((m) => m[2] as string);
    expect(keyLines(stdout).map((m) => m[1])).toEqual(['0', '1', '2']);
    const careerLists = [];
    for (const key of keys) {
      const res = await fetch(`${baseUrl}/api/v1/careers`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      careerLists.push(JSON.stringify(((await res.json()) as { data: unknown[] }).data));
    }
    expect(new Set(careerLists).size).toBe(3);
    const unknown = await fetch(`${baseUrl}/api/v1/careers`, { headers: { authorization: 'Bearer sim_live_nope' } });
    expect(unknown.status).toBe(401);
  }, 60_000);

  it('without --companies prints the single key as before', async () => {
    const stdout = await simulate(['--port', '0', '--seed', '1'], (out) => out.includes('CHANGEFEED_API_KEY='));
    expect(stdout).toMatch(
      /^simulator listening at http:\/\/127\.0\.0\.1:\d+\nCHANGEFEED_BASE_URL=\S+\nCHANGEFEED_API_KEY=sim_live_\w{32}\n$/,
    );
    expect(keyLines(stdout)).toEqual([]);
  }, 60_000);
});
