import { describe, expect, it } from 'vitest';
import { Refusal } from '../../src/console/consoleRequests.js';
import { TenantActions } from '../../src/console/tenantActions.js';

describe('console actions run one at a time per tenant', () => {
  it('refuses a second action for a tenant while one runs (409), and takes one again once it ends', async () => {
    const actions = new TenantActions();
    let finish!: (n: number) => void;
    const replay = actions.run('acme', 'a replay', () => new Promise<number>((resolve) => (finish = resolve)));

    const refused = await actions
      .run('acme', 'a replay count', () => Promise.resolve(1))
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Refusal);
    expect(refused).toMatchObject({
      status: 409,
      message: 'a replay is already running for tenant acme; wait until it finishes, then try again',
    });
    // Another tenant is not held up.
    expect(await actions.run('globex', 'a replay count', () => Promise.resolve(7))).toBe(7);

    finish(3);
    expect(await replay).toBe(3);
    expect(await actions.run('acme', 'a replay count', () => Promise.resolve(2))).toBe(2);
  });

  it('takes an action again after one that failed', async () => {
    const actions = new TenantActions();
    await expect(actions.run('acme', 'a replay', () => Promise.reject(new Error('store closed')))).rejects.toThrow(
      'store closed',
    );
    expect(await actions.run('acme', 'a replay', () => Promise.resolve(1))).toBe(1);
  });
});
