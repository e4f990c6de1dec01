import { describe, expect, it } from 'vitest';
import { parseAdvertiseUrl } from '../../src/cluster/clusterConfig.js';
import { decideRoute, type RouteDecision, type RouteQuestion } from '../../src/cluster/holderRoute.js';
import { LeaseDirectory } from '../../src/cluster/leaseDirectory.js';
import type { LeaseRow } from '../../src/cluster/leaseTable.js';
import { ManualClock } from '../support/manualClock.js';

const SELF = { instanceId: 'replica-a', advertiseUrl: 'http://10.0.0.1:9464' };
const TARGET = '/v1/tenants/acme/events/stream?after=12&log=career';
const held = (over: Partial<NonNullable<RouteQuestion['lease']>> = {}): RouteQuestion['lease'] => ({
  holder: 'replica-b',
  expiresInMs: 9_000,
  holderLive: true,
  holderUrl: 'http://10.0.0.2:9464',
  ...over,
});
const unavailable = (reason: string, holder?: string): RouteDecision =>
  ({ kind: 'unavailable', reason, holder, retryAfterSeconds: 5 }) as RouteDecision;

describe('decideRoute', () => {
  const cases: [string, Partial<RouteQuestion>, RouteDecision][] = [
    [
      'serves a tenant running here, whatever the lease row says',
      { heldHere: true, lease: undefined },
      { kind: 'serve' },
    ],
    [
      'redirects to the holder with the same path and query',
      { lease: held() },
      { kind: 'redirect', url: `http://10.0.0.2:9464${TARGET}`, holder: 'replica-b' },
    ],
    [
      'keeps the path prefix of an advertised URL behind an ingress',
      { lease: held({ holderUrl: 'https://feeds.example.com/replica-b' }) },
      { kind: 'redirect', url: `https://feeds.example.com/replica-b${TARGET}`, holder: 'replica-b' },
    ],
    ['a tenant never leased (or unknown) has no holder', { lease: undefined }, unavailable('no-holder')],
    ['a released lease has no holder', { lease: held({ holder: undefined }) }, unavailable('no-holder')],
    ['an expired lease has no holder', { lease: held({ expiresInMs: 0 }) }, unavailable('no-holder')],
    ['a NaN expiry is no valid lease', { lease: held({ expiresInMs: Number.NaN }) }, unavailable('no-holder')],
    [
      'never redirects to itself when the row still names this replica',
      { lease: held({ holder: 'replica-a', holderUrl: SELF.advertiseUrl }) },
      unavailable('holder-is-self', 'replica-a'),
    ],
    [
      'a holder that stopped heartbeating is not redirected to',
      { lease: held({ holderLive: false }) },
      unavailable('holder-not-live', 'replica-b'),
    ],
    [
      'a holder without advertiseUrl is named, with Retry-After',
      { lease: held({ holderUrl: undefined }) },
      unavailable('holder-not-advertised', 'replica-b'),
    ],
    [
      'a command holding the lease (replay) is named',
      { lease: held({ holder: 'replay@host-12', holderUrl: undefined, holderLive: false }) },
      unavailable('holder-not-live', 'replay@host-12'),
    ],
    [
      "never redirects to this replica's own URL (two replicas given one URL would loop)",
      { lease: held({ holderUrl: SELF.advertiseUrl }) },
      unavailable('holder-url-is-self', 'replica-b'),
    ],
    [
      'redirects from a replica that advertises nothing itself',
      { self: { instanceId: 'replica-a', advertiseUrl: undefined }, lease: held() },
      { kind: 'redirect', url: `http://10.0.0.2:9464${TARGET}`, holder: 'replica-b' },
    ],
  ];
  it.each(cases)('%s', (_, over, expected) => {
    const question: RouteQuestion = {
      tenant: 'acme',
      heldHere: false,
      lease: held(),
      self: SELF,
      target: TARGET,
      retryAfterSeconds: 5,
      ...over,
    };
    expect(decideRoute(question)).toEqual(expected);
  });
});

describe('parseAdvertiseUrl', () => {
  const cases: [string | null, string | undefined][] = [
    ['http://10.0.0.2:9464', 'http://10.0.0.2:9464'],
    ['http://10.0.0.2:9464/', 'http://10.0.0.2:9464'],
    ['https://feeds.example.com/replica-0/', 'https://feeds.example.com/replica-0'],
    ['HTTP://Feeds.Example.com', 'http://feeds.example.com'],
    ['http://[::1]:9464', 'http://[::1]:9464'],
    ['ftp://10.0.0.2', undefined],
    ['javascript:alert(1)', undefined],
    ['http://user:secret@10.0.0.2', undefined],
    ['http://10.0.0.2/?x=1', undefined],
    ['http://10.0.0.2/?', undefined],
    ['http://10.0.0.2/#top', undefined],
    ['10.0.0.2:9464', undefined],
    ['', undefined],
    [null, undefined],
    [`http://example.com/${'a'.repeat(600)}`, undefined],
  ];
  it.each(cases)('%s -> %s', (text, expected) => expect(parseAdvertiseUrl(text)).toBe(expected));
});

describe('LeaseDirectory', () => {
  const row = (tenant: string, expiresInMs: number): LeaseRow => ({
    tenant,
    holder: 'replica-b',
    epoch: 1,
    expiresInMs,
    holderLive: true,
    holderLiveForMs: 15_000,
    holderUrl: 'http://10.0.0.2:9464',
    holderHealthUrl: undefined,
  });

  it('reads the lease table once per second however many requests and tenant names arrive', async () => {
    const clock = new ManualClock(0);
    let reads = 0;
    const directory = new LeaseDirectory(
      {
        list: () => {
          reads++;
          return Promise.resolve([row('acme', 5_000)]);
        },
      },
      { clock },
    );
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => directory.lease(i % 2 === 0 ? 'acme' : `made-up-${i}`)),
    );
    expect(reads).toBe(1);
    expect(answers.filter((a) => a !== undefined)).toHaveLength(100);
    await clock.advance(999);
    expect((await directory.lease('acme'))?.expiresInMs).toBe(4_001);
    expect(reads).toBe(1);
    await clock.advance(1);
    await directory.lease('acme');
    expect(reads).toBe(2);
  });

  it('counts a kept row down, so a lease that ran out meanwhile is expired', async () => {
    const clock = new ManualClock(0);
    const directory = new LeaseDirectory({ list: () => Promise.resolve([row('acme', 300)]) }, { clock });
    await directory.lease('acme');
    await clock.advance(500);
    const lease = await directory.lease('acme');
    expect(
      decideRoute({ tenant: 'acme', heldHere: false, lease, self: SELF, target: '/', retryAfterSeconds: 5 }),
    ).toMatchObject({ kind: 'unavailable', reason: 'no-holder' });
  });

  it('keeps a failed read as long as a good one: a database gone is not asked by every request', async () => {
    const clock = new ManualClock(0);
    let reads = 0;
    const directory = new LeaseDirectory(
      {
        list: () => {
          reads++;
          return Promise.reject(new Error('connection refused'));
        },
      },
      { clock },
    );
    for (let i = 0; i < 20; i++) await expect(directory.lease('acme')).rejects.toThrow('connection refused');
    expect(reads).toBe(1);
    await clock.advance(1_000);
    await expect(directory.lease('acme')).rejects.toThrow();
    expect(reads).toBe(2);
  });
});
