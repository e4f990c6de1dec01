import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { twoTenants } from '../support/twoTenants.js';

interface LogLine {
  msg: string;
  tenant?: string;
  sink?: string;
  sinks?: { tenant?: string; sink: string }[];
}

describe('tenant identity', () => {
  it("says whose every event and every tenant's log line is, two tenants in one run", async () => {
    const set = await twoTenants();
    const run = await runCli(['run', '--once', '--config', set.config]);
    expect(run.status, run.stderr.slice(-4000)).toBe(0);

    for (const [tenant, count] of [
      ['acme', 5],
      ['beta', 8],
    ] as const) {
      const events = readFileSync(set.sinkFile(tenant), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { tenant?: string });
      expect(events).toHaveLength(count);
      expect(new Set(events.map((e) => e.tenant))).toEqual(new Set([tenant]));
    }

    const logs = run.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
    // What a tenant's sink or runtime says names the tenant.
    const ofASink = logs.filter((l) => l.sink !== undefined);
    expect(ofASink.length).toBeGreaterThanOrEqual(2);
    for (const line of ofASink) expect(line.tenant, line.msg).toMatch(/^(acme|beta)$/);
    // The summary of the run lists each tenant's sinks by tenant: both are named `out`.
    const summary = logs.find((l) => l.msg === 'sweep complete');
    expect(summary?.sinks?.map((s) => `${s.tenant}/${s.sink}`).sort()).toEqual(['acme/out', 'beta/out']);
  });
});
