import { afterEach, describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../src/cluster/writeFence.js';
import { guardedClient, startCountingService, type CountingService } from '../support/countingService.js';

let service: CountingService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

describe('the request guard of a service client', () => {
  it('is asked again as the request is written: a lease lost while it waited for its connection sends nothing', async () => {
    const { url, requests } = (service = await startCountingService());
    // Passes when the request is handed to the pool, refuses by the time the pool writes it (a
    // replica paused while its connection was being opened, resumed past its lease).
    let asked = 0;
    const client = guardedClient(url, () => {
      if (++asked > 1) throw new LeaseLostError('acme', 'past its local deadline');
    });
    try {
      await expect(client.getJson('/api/v1/ping', {}, 'poll')).rejects.toMatchObject({ code: 'LEASE_LOST' });
      expect(asked).toBe(2);
      expect(requests()).toBe(0);
    } finally {
      await client.close();
    }
  });

  it('lets a request through when the lease holds at both checks', async () => {
    const { url, requests } = (service = await startCountingService());
    let asked = 0;
    const client = guardedClient(url, () => {
      asked++;
    });
    try {
      await client.getJson('/api/v1/ping', {}, 'poll');
      expect(asked).toBe(2);
      expect(requests()).toBe(1);
    } finally {
      await client.close();
    }
  });
});
