import { describe, expect, it } from 'vitest';
import { stretchesOutsideLease, type CompanyRequest } from '../cluster/replicaRequests.js';

const tenantName = (company: number): string => `company-${company}`;
const acquired = (instanceId: string, at: number) => ({ instanceId, tenant: 'company-0', at });
const polled = (instanceId: string, at: number): CompanyRequest => ({ instanceId, at });

describe('requests outside a lease, read from the order of the requests and the acquisitions', () => {
  it.each([
    {
      case: 'a graceful hand-over whose last request was received after the next holder acquired',
      requests: [polled('a', 1_000), polled('a', 5_000), polled('b', 5_200)],
      acquisitions: [acquired('a', 500), acquired('b', 4_900)],
      found: 0,
    },
    {
      case: 'handed over and back, each stretch under its own acquisition',
      requests: [polled('a', 1_000), polled('b', 6_000), polled('a', 9_000)],
      acquisitions: [acquired('a', 500), acquired('b', 5_500), acquired('a', 8_500)],
      found: 0,
    },
    {
      case: 'a paused holder resuming and polling once between the new holder’s requests',
      requests: [polled('a', 1_000), polled('b', 6_000), polled('a', 7_000), polled('b', 8_000)],
      acquisitions: [acquired('a', 500), acquired('b', 5_500)],
      found: 2,
    },
    {
      case: 'a stretch that began before the acquisition it would need',
      requests: [polled('a', 1_000), polled('b', 6_000), polled('a', 8_000)],
      acquisitions: [acquired('a', 500), acquired('b', 5_500), acquired('a', 8_500)],
      found: 1,
    },
    {
      case: 'a replica that never acquired the tenant',
      requests: [polled('c', 1_000)],
      acquisitions: [acquired('a', 500)],
      found: 1,
    },
  ])('$case: $found found', ({ requests, acquisitions, found }) => {
    const result = stretchesOutsideLease(new Map([[0, requests]]), acquisitions, tenantName);
    expect(result).toHaveLength(found);
  });

  it('names the company, the replica and the acquisitions left', () => {
    const result = stretchesOutsideLease(
      new Map([[0, [polled('a', 1_000), polled('b', 6_000), polled('a', 7_000)]]]),
      [acquired('a', 500), acquired('b', 5_500)],
      tenantName,
    );
    expect(result).toEqual([
      'company 0: a began polling at 7000 without an acquisition of its own before it (its unused acquisitions: none)',
    ]);
  });
});
