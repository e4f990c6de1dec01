import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/cluster/leaseTable.js';
import { admin, freshSchema } from '../store/postgresTestDb.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { POSTGRES_URL } from '../support/postgresAdmin.js';
import { deadLettersOf, lines, runReplicaUntilDelivered, twoTenants } from '../support/twoTenants.js';
import { acquireOne } from '../support/acquireOne.js';
import { makeTempDir } from '../support/tempDir.js';

describe.skipIf(!admin)('commands on one tenant of the shared PostgreSQL store', () => {
  it('plan, watch retry, replay and dead-letters act on the named tenant; replay delivers only under the lease', async () => {
    const schema = freshSchema();
    const set = await twoTenants({ store: { url: POSTGRES_URL, schema }, extraCareers: { acme: ['car_gone'] } });
    await runReplicaUntilDelivered(set);
    const cli = (...args: string[]) => runCli([...args, '--config', set.config]);

    const plan = await cli('plan', '--tenant', 'beta', '--no-discover', '--json');
    expect(plan.status, plan.stderr).toBe(0);
    const report = JSON.parse(plan.stdout) as { tenant: string; busiest: { objectId: string }[] };
    expect(report.tenant).toBe('beta');
    expect(report.busiest.map((l) => l.objectId).sort()).toEqual([...set.careers.beta].sort());

    expect((await cli('watch', 'retry', '--tenant', 'beta', 'career', 'car_gone')).stdout).toContain(
      'is not watched by this store',
    );
    set.simulator.companies[0]!.addObject('career', 'car_gone');
    const back = await cli('watch', 'retry', '--tenant', 'acme', 'career', 'car_gone');
    expect(back.status, back.stdout + back.stderr).toBe(0);
    expect(back.stdout).toContain('car_gone answers again');

    // No replica holds beta now (run --once released its leases): replay takes the lease,
    // delivers under it and gives it back.
    const replayArgs = ['replay', '--sink', 'out', '--since', '2000-01-01T00:00:00Z'];
    const replay = await cli(...replayArgs, '--tenant', 'beta');
    expect(replay.status, replay.stderr).toBe(0);
    expect([lines(set.sinkFile('acme')), lines(set.sinkFile('beta'))]).toEqual([5, 16]);

    // A replica holds acme: delivering beside it is refused, queuing for it is not.
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}`, max: 1 });
    try {
      const leases = new LeaseTable(pool, { leaseMs: 60_000 });
      const beta = (await leases.list()).find((l) => l.tenant === 'beta');
      expect(beta?.holder, 'replay released its lease').toBeUndefined();
      expect(await acquireOne(leases, 'acme', 'replica-1')).toBeDefined();
      const refused = await cli(...replayArgs, '--tenant', 'acme');
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain('tenant "acme" is leased by replica-1');
      expect(refused.stderr).toContain('--queue-only');
      expect(lines(set.sinkFile('acme'))).toBe(5);
      const queued = await cli(...replayArgs, '--tenant', 'acme', '--queue-only');
      expect(queued.status, queued.stderr).toBe(0);
      expect(queued.stdout).toContain('queued 5 events');
      expect(lines(set.sinkFile('acme'))).toBe(5);
      expect((await leases.list()).find((l) => l.tenant === 'acme')?.holder).toBe('replica-1');

      // Dead letters go back in line for the holder to deliver, in the named tenant only.
      expect(await deadLettersOf(set, 'beta')).toBe(8);
      const retried = await cli('dead-letters', 'retry', '--tenant', 'beta', '--all');
      expect(retried.stdout).toContain('re-queued 8 dead letters');
      const acmeDead = await cli('dead-letters', 'list', '--tenant', 'acme', '--json');
      expect(JSON.parse(acmeDead.stdout)).toEqual([]);
    } finally {
      await pool.end();
    }
  });

  it('tenants list reads a store no daemon created without creating it, as it never migrates one', async () => {
    const schema = freshSchema();
    const root = makeTempDir();
    mkdirSync(join(root, 'tenants'));
    writeFileSync(join(root, 'tenants', 'acme.yaml'), 'api: { apiKey: secret-acme-0001 }\n');
    const main = join(root, 'changefeed.yaml');
    writeFileSync(
      main,
      [
        `stateDir: ${join(root, 'state')}`,
        `store: { url: "${POSTGRES_URL}", schema: ${schema} }`,
        `tenants: { dir: ${join(root, 'tenants')} }`,
        'api: { baseUrl: https://skills.example.com }',
        'sinks: [{ name: out, type: stdout }]',
      ].join('\n'),
    );
    const listed = await runCli(['tenants', 'list', '--config', main]);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(`acme  valid  ${join(root, 'tenants', 'acme.yaml')}`);
    const found = await admin!.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [schema]);
    expect(found.rowCount, 'the schema was created').toBe(0);
  });
});
