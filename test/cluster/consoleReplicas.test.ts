import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../support/daemonProcess.js';
import { inProcessCluster } from '../support/inProcessReplicas.js';
import { writeTenantFile } from '../support/tenantFile.js';
import { receiver, SECRET } from '../support/webhookHarness.js';
import { connectAdmin, simulatedCompanies } from './replicaHarness.js';

const admin = await connectAdmin('the console replicas test needs PostgreSQL');
afterAll(async () => {
  await admin?.end();
});

const TOKEN = 'operator-token-0123456789';
const CONSOLE = {
  'http.port': 0,
  'console.enabled': true,
  'console.tokens': [{ token: TOKEN, role: 'operator' }],
};

describe.skipIf(!admin)('the operator console on replicas sharing a PostgreSQL store', () => {
  it('shows a tenant held by another replica, with the same session on both, and counts its replay from the store', async () => {
    const simulator = await simulatedCompanies(29, 1);
    const hook = await receiver();
    const cluster = inProcessCluster(admin!, { simulatorUrl: simulator.url, leaseSeconds: 6 });
    writeTenantFile(cluster.tenantsDir, 'company-0', {
      apiKey: simulator.companies[0]!.apiKey,
      sink: `{ name: out, type: webhook, url: "${hook.url}", secret: "${SECRET}" }`,
    });
    const a = await cluster.start('replica-a', { overrides: CONSOLE });
    await until(async () => (await cluster.holders()).get('company-0') === 'replica-a', 30_000, 'A holding the tenant');
    const b = await cluster.start('replica-b', { overrides: CONSOLE });
    const consoleOf = (replica: typeof a) => `${replica.daemon.healthUrl}/console`;

    // Signed in at B, which does not run the tenant.
    const signIn = await fetch(`${consoleOf(b)}/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: TOKEN }).toString(),
      redirect: 'manual',
    });
    expect(signIn.status).toBe(303);
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const holder = (await cluster.holders()).get('company-0');
    const tenants = await (await fetch(consoleOf(b), { headers: { cookie } })).text();
    expect(tenants).toContain(holder === 'replica-b' ? 'running on this replica' : `held by ${holder}`);
    // A session B issued opens A too: the replicas sign sessions with a key they share.
    const atA = await fetch(consoleOf(a), { headers: { cookie }, redirect: 'manual' });
    expect(atA.status).toBe(200);

    // What B shows of the tenant is read from the shared store.
    await until(
      async () => {
        const logs = await (await fetch(`${consoleOf(b)}/tenants/company-0`, { headers: { cookie } })).text();
        return logs.includes('career') && !logs.includes('No log is watched yet');
      },
      30_000,
      "the tenant's logs on B",
    );
    const page = await (await fetch(`${consoleOf(b)}/tenants/company-0/replay`, { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
    const counted = await fetch(`${consoleOf(b)}/tenants/company-0/replay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams({ csrf, action: 'count', sink: 'out', since: '2000-01-01T00:00:00Z' }).toString(),
    });
    expect(counted.status).toBe(200);
    expect(await counted.text()).toMatch(/\d+ events? would be queued for out/);
  }, 90_000);
});
