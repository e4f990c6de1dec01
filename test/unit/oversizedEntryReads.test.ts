import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QuarantinedEntry } from '../../src/api/quarantinedEntry.js';
import type { ServiceClient } from '../../src/api/serviceClient.js';
import { logKey } from '../../src/logs.js';
import { PageSizes } from '../../src/poll/pageSize.js';
import { MAX_OVERSIZED_PER_READ, readBytesBound } from '../../src/poll/sizedPageReader.js';
import { readVersionLog } from '../../src/poll/versionLogWalker.js';
import { walkWindow, type WindowWalk } from '../../src/poll/windowWalker.js';
import { quarantineFingerprint } from '../../src/store/storedRows.js';
import { guardedClient } from '../support/countingService.js';

const T0 = Date.UTC(2026, 10, 22, 11, 0, 0);
const MINUTE = 60_000;
const OVERSIZED = 6;
const MAX_RESPONSE_BYTES = 1024; // guardedClient's

/** Entry i at T0 + i minutes, oldest first; entry OVERSIZED larger than a response may be. */
const entries = Array.from({ length: 16 }, (_, i) => ({
  id: `e-${String(i).padStart(2, '0')}`,
  performedAt: new Date(T0 + i * MINUTE).toISOString(),
  ...(i === OVERSIZED ? { padding: 'x'.repeat(3 * MAX_RESPONSE_BYTES) } : {}),
}));

/**
 * A career log whose envelope puts pagination fields before `data`, as some services do, and
 * which counts the requests whose page held the oversized entry.
 */
let pagesWithOversized = 0;
const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const [from, to] = [Date.parse(url.searchParams.get('from')!), Date.parse(url.searchParams.get('to')!)];
  const offset = Number(url.searchParams.get('offset'));
  const limit = Number(url.searchParams.get('limit'));
  const page = entries.filter((e) => Date.parse(e.performedAt) >= from && Date.parse(e.performedAt) < to);
  const data = page.slice(offset, offset + limit);
  if (data.some((e) => e.id === entries[OVERSIZED]!.id)) pagesWithOversized++;
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ offset, limit, from: url.searchParams.get('from'), total: page.length, data }));
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function poll(sizes: PageSizes, from: number, to: number) {
  const quarantined: QuarantinedEntry[] = [];
  pagesWithOversized = 0;
  const stats = await walkWindow(
    {
      client: guardedClient(url, () => undefined),
      log: 'career',
      objectId: 'c-1',
      sortOrder: 'oldest-first',
      sizes,
      commit: () => Promise.resolve(),
      quarantine: (q) => quarantined.push(...q),
    },
    { from, to },
  );
  return { quarantined, requests: stats.requests, pagesWithOversized };
}

describe('an entry too large for a page of its own, re-read by the overlap of later polls', () => {
  it('costs each overlap poll one request and is the same quarantine record each time', async () => {
    const sizes = new PageSizes();
    const first = await poll(sizes, T0, T0 + 12 * MINUTE);
    expect(first.quarantined).toHaveLength(1);
    // The log's reads elsewhere since were roomy: its page size grew back to full pages.
    for (let i = 0; i < 64; i++)
      sizes.record(logKey({ log: 'career', objectId: 'c-1' }), { tooLarge: false, bytes: 10, maxBytes: 1024 });
    expect(sizes.limit(logKey({ log: 'career', objectId: 'c-1' }))).toBe(200);

    const overlap = await poll(sizes, T0 + 4 * MINUTE, T0 + 16 * MINUTE);
    expect(overlap.pagesWithOversized).toBe(1);
    expect(overlap.quarantined).toHaveLength(1);
    // Found at offset 6 of the first window and 2 of the second, behind other envelope fields.
    expect(overlap.quarantined[0]!.raw.startsWith('{"id":"e-06"')).toBe(true);
    expect(quarantineFingerprint(overlap.quarantined[0]!)).toBe(quarantineFingerprint(first.quarantined[0]!));

    // Once the windows have moved past it, the log reads full pages again.
    const later = await poll(sizes, T0 + 12 * MINUTE, T0 + 16 * MINUTE);
    expect(later.requests).toBe(1);
  });
});

/**
 * A career log that answers every page as `answer` says; after GIVE_UP pages it answers empty
 * ones, so a walk that would not stop on its own still ends and its test fails on what it read.
 */
const GIVE_UP = 400;

/** A walk of career log c-1, oldest first, with page sizes of its own; `parts` adds the rest. */
function careerWalk(client: ServiceClient, parts: Pick<WindowWalk, 'commit'> & Partial<WindowWalk>): WindowWalk {
  return { client, log: 'career', objectId: 'c-1', sortOrder: 'oldest-first', sizes: new PageSizes(), ...parts };
}

/** What a read failed with; undefined when it succeeded. */
function failureOf(read: Promise<unknown>): Promise<(Error & { code?: string }) | undefined> {
  return read.then(
    () => undefined,
    (error: unknown) => error as Error & { code?: string },
  );
}
async function hostileLog(answer: (offset: number) => string) {
  let pages = 0;
  const hostile = createServer((req, res) => {
    const offset = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('offset'));
    pages++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(pages > GIVE_UP ? '{"data":[]}' : answer(offset));
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  const quarantined: QuarantinedEntry[] = [];
  const sizes = new PageSizes();
  try {
    const walk = walkWindow(
      {
        client: guardedClient(`http://127.0.0.1:${(hostile.address() as AddressInfo).port}`, () => undefined),
        log: 'career',
        objectId: 'c-1',
        sortOrder: 'oldest-first',
        sizes,
        commit: () => Promise.resolve(),
        quarantine: (q) => quarantined.push(...q),
      },
      { from: T0, to: T0 + 12 * MINUTE },
    );
    const error = await failureOf(walk);
    return { error, pages, quarantined, limit: sizes.limit(logKey({ log: 'career', objectId: 'c-1' })) };
  } finally {
    hostile.closeAllConnections();
    await new Promise<void>((resolve) => hostile.close(() => resolve()));
  }
}

const padding = 'x'.repeat(3 * MAX_RESPONSE_BYTES);
const oversizedEntry = (offset: number) =>
  JSON.stringify({ id: `e-${offset}`, performedAt: new Date(T0).toISOString(), padding });

describe('a service whose every page is too large', () => {
  it('with the excess before `data`: the read fails at once, nothing quarantined, the page size kept', async () => {
    const read = await hostileLog(() => `{"padding":"${padding}","data":[]}`);
    expect(read.error?.code).toBe('API_RESPONSE_TOO_LARGE');
    expect(read.error?.message).toMatch(/reach no entry of its "data" array/);
    expect(read.pages).toBe(1);
    expect(read.quarantined).toEqual([]);
    expect(read.limit).toBe(200);
  });

  it('with an oversized entry at every offset: quarantines MAX_OVERSIZED_PER_READ of them, then fails', async () => {
    const read = await hostileLog((offset) => `{"data":[${oversizedEntry(offset)}]}`);
    expect(read.error?.code).toBe('OVERSIZED_ENTRIES');
    expect(read.error?.message).toMatch(/more than 64 entries in one read \(the last at offset 64 of /);
    expect(read.quarantined).toHaveLength(MAX_OVERSIZED_PER_READ);
    // Pages of 200 down to 3 refused (7), one page of one per quarantined entry, the one past the bound.
    expect(read.pages).toBe(7 + MAX_OVERSIZED_PER_READ + 1);
  });

  it('oversized entries with a readable one after every 64: quarantines MAX_OVERSIZED_PER_READ, then fails', async () => {
    // Each readable entry would end a run before the bound, and the walk would keep 32 KiB of
    // every other offset of the window (10,000) until its commit.
    const entryAt = (offset: number) =>
      offset % (MAX_OVERSIZED_PER_READ + 1) === MAX_OVERSIZED_PER_READ
        ? JSON.stringify({ id: `e-${offset}`, performedAt: new Date(T0).toISOString() })
        : oversizedEntry(offset);
    const read = await hostileLog((offset) => `{"data":[${entryAt(offset)}]}`);
    expect(read.error?.code).toBe('OVERSIZED_ENTRIES');
    expect(read.quarantined).toHaveLength(MAX_OVERSIZED_PER_READ);
  });

  it('oversized entries interrupted by readable ones are all quarantined, up to the bound', async () => {
    const entryAt = (offset: number) =>
      offset % 3 === 2
        ? JSON.stringify({ id: `e-${offset}`, performedAt: new Date(T0).toISOString() })
        : oversizedEntry(offset);
    // Offsets 0..95: two of every three oversized, MAX_OVERSIZED_PER_READ in all.
    const read = await hostileLog((offset) => (offset >= 96 ? '{"data":[]}' : `{"data":[${entryAt(offset)}]}`));
    expect(read.error).toBeUndefined();
    expect(read.quarantined).toHaveLength(MAX_OVERSIZED_PER_READ);
  });
});

describe('an oversized page whose body breaks off before its head is read', () => {
  it('fails the read instead of quarantining a head cut where the break fell', async () => {
    // Declared too large, so only the head is read; each answer breaks off at another byte.
    let cut = 200;
    const breaking = createServer((_req, res) => {
      const head = `{"data":[${oversizedEntry(0)}]}`.slice(0, (cut += 100));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(64 * 1024 * 1024) });
      res.write(head, () => res.destroy());
    });
    await new Promise<void>((resolve) => breaking.listen(0, '127.0.0.1', resolve));
    const client = guardedClient(`http://127.0.0.1:${(breaking.address() as AddressInfo).port}`, () => undefined);
    try {
      const reads = [];
      for (let i = 0; i < 2; i++) {
        const quarantined: QuarantinedEntry[] = [];
        const error = await failureOf(
          walkWindow(
            {
              client,
              log: 'career',
              objectId: 'c-1',
              sortOrder: 'oldest-first',
              sizes: new PageSizes(),
              commit: () => Promise.resolve(),
              quarantine: (q) => quarantined.push(...q),
            },
            { from: T0, to: T0 + 12 * MINUTE },
          ),
        );
        reads.push({ error, quarantined });
      }
      // Each read would otherwise keep a record of its own for the same entry.
      for (const read of reads) {
        expect(read.error?.code).toBe('API_CONNECTION');
        expect(read.quarantined).toEqual([]);
      }
    } finally {
      breaking.closeAllConnections();
      await new Promise<void>((resolve) => breaking.close(() => resolve()));
    }
  });
});

describe('a skill version log (no date filter) with a readable entry after every 64 oversized ones', () => {
  it('fails its read past MAX_OVERSIZED_PER_READ instead of reading to the offset cap', async () => {
    let pages = 0;
    const hostile = createServer((req, res) => {
      const offset = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('offset'));
      pages++;
      const entry =
        offset % (MAX_OVERSIZED_PER_READ + 1) === MAX_OVERSIZED_PER_READ
          ? JSON.stringify({ id: `e-${offset}`, performedAt: new Date(T0 - offset * MINUTE).toISOString() })
          : oversizedEntry(offset);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(pages > GIVE_UP ? '{"data":[]}' : `{"data":[${entry}]}`);
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    try {
      const error = await failureOf(
        readVersionLog({
          client: guardedClient(`http://127.0.0.1:${(hostile.address() as AddressInfo).port}`, () => undefined),
          objectId: 's-1',
          sortOrder: 'newest-first',
          seenAmong: () => Promise.resolve(new Set<string>()),
          sizes: new PageSizes(),
        }),
      );
      expect(error?.code).toBe('OVERSIZED_ENTRIES');
      expect(error?.message).toMatch(/more than 64 entries in one read \(the last at offset \d+\)/);
      expect(pages).toBeLessThan(GIVE_UP);
    } finally {
      hostile.closeAllConnections();
      await new Promise<void>((resolve) => hostile.close(() => resolve()));
    }
  });
});

describe('entries each under api.maxEntryBytes, at every offset: one read holds at most readBytesBound of them', () => {
  const ENTRY_BYTES = 1_000_000;
  const PAGE_CAP = 2_100_000; // two such entries a page
  const COUNT = 40;
  const entryPadding = 'x'.repeat(ENTRY_BYTES - 100);
  const bigEntry = (i: number, at: number) =>
    JSON.stringify({
      id: `b-${String(i).padStart(2, '0')}`,
      performedAt: new Date(at).toISOString(),
      padding: entryPadding,
    });

  /**
   * A log of COUNT entries of about 1 MB, the i-th performed at `at(i)`, oldest first; an entry
   * `stray` says is sent on every page's place for it whatever the window asked for.
   */
  async function bigEntryLog(
    at: (i: number) => number,
    stray: (i: number) => boolean = () => false,
    giveUpAfter = Infinity,
  ) {
    let requests = 0;
    const big = createServer((req, res) => {
      requests++;
      const query = new URL(req.url ?? '/', 'http://x').searchParams;
      const [offset, limit] = [Number(query.get('offset')), Number(query.get('limit'))];
      const from = query.has('from') ? Date.parse(query.get('from')!) : -Infinity;
      const to = query.has('to') ? Date.parse(query.get('to')!) : Infinity;
      const inWindow = Array.from({ length: COUNT }, (_, i) => i).filter(
        (i) => stray(i) || (at(i) >= from && at(i) < to),
      );
      res.on('error', () => undefined);
      res.writeHead(200, { 'content-type': 'application/json' });
      if (requests > giveUpAfter) return void res.end('{"data":[]}');
      res.end(
        `{"data":[${inWindow
          .slice(offset, offset + limit)
          .map((i) => bigEntry(i, at(i)))
          .join(',')}]}`,
      );
    });
    await new Promise<void>((resolve) => big.listen(0, '127.0.0.1', resolve));
    const client = guardedClient(
      `http://127.0.0.1:${(big.address() as AddressInfo).port}`,
      () => undefined,
      PAGE_CAP,
      600_000,
    );
    return {
      client,
      requests: () => requests,
      close: async () => {
        big.closeAllConnections();
        await new Promise<void>((resolve) => big.close(() => resolve()));
      },
    };
  }

  it('a window is committed in parts of at most the bound and a page, every entry once', async () => {
    const log = await bigEntryLog((i) => T0 + i * 1_000);
    try {
      const commits: string[][] = [];
      await walkWindow(
        careerWalk(log.client, {
          commit: (entries) => {
            commits.push(entries.map((e) => e.id));
            return Promise.resolve();
          },
        }),
        { from: T0, to: T0 + COUNT * 1_000 },
      );
      expect(commits.flat()).toEqual(Array.from({ length: COUNT }, (_, i) => `b-${String(i).padStart(2, '0')}`));
      const bound = readBytesBound(PAGE_CAP);
      for (const part of commits) expect(part.length * ENTRY_BYTES).toBeLessThanOrEqual(bound + PAGE_CAP);
      expect(commits.length).toBeGreaterThan(1);
    } finally {
      await log.close();
    }
  });

  it('an entry dated past the window does not carry the commit past it: later entries are still read', async () => {
    // Entry 5 claims a date ten days on, and the service sends it whatever the window.
    const STRAY = 5;
    const at = (i: number) => (i === STRAY ? T0 + 10 * 86_400_000 : T0 + i * 1_000);
    const log = await bigEntryLog(at, (i) => i === STRAY);
    try {
      const commits: { ids: string[]; windowEnd: number }[] = [];
      const window = { from: T0, to: T0 + COUNT * 1_000 };
      await walkWindow(
        careerWalk(log.client, {
          commit: (entries, windowEnd) => {
            commits.push({ ids: entries.map((e) => e.id), windowEnd });
            return Promise.resolve();
          },
        }),
        window,
      );
      const committed = new Set(commits.flatMap((c) => c.ids));
      for (let i = 0; i < COUNT; i++) if (i !== STRAY) expect(committed).toContain(`b-${String(i).padStart(2, '0')}`);
      // The cursor never claims time past the window, nor goes back.
      for (const [k, c] of commits.entries()) {
        expect(c.windowEnd).toBeLessThanOrEqual(window.to);
        if (k > 0) expect(c.windowEnd).toBeGreaterThanOrEqual(commits[k - 1]!.windowEnd);
      }
    } finally {
      await log.close();
    }
  });

  it('a millisecond holding more is WINDOW_TOO_DENSE, naming the bytes', async () => {
    const log = await bigEntryLog(() => T0);
    try {
      const error = await failureOf(
        walkWindow(
          careerWalk(log.client, {
            commit: () => Promise.resolve(),
          }),
          { from: T0, to: T0 + 1 },
        ),
      );
      expect(error?.code).toBe('WINDOW_TOO_DENSE');
      expect(error?.message).toMatch(/holds more than \d+ bytes of entries in /);
    } finally {
      await log.close();
    }
  });

  it('a millisecond holding more, in an hour of a log of unknown order, fails after one read, not one per halving', async () => {
    const DENSE = T0 + 30 * MINUTE;
    // One read is 7 refused pages and 34 of one entry; past 50 requests the service answers empty
    // pages, so a walk that halves towards the millisecond ends without an error, having moved
    // little more than one read's bytes.
    const log = await bigEntryLog(() => DENSE, undefined, 50);
    try {
      const error = await failureOf(
        walkWindow(
          {
            client: log.client,
            log: 'career',
            objectId: 'c-1',
            sortOrder: undefined,
            sizes: new PageSizes(),
            commit: () => Promise.resolve(),
          },
          { from: T0, to: T0 + 60 * MINUTE },
        ),
      );
      expect(error?.code).toBe('WINDOW_TOO_DENSE');
      expect(error?.message).toContain(`in ${new Date(DENSE).toISOString()}..${new Date(DENSE + 1).toISOString()}`);
      expect(log.requests()).toBe(41);
    } finally {
      await log.close();
    }
  });

  it('a version log holding more fails VERSION_LOG_TOO_LONG instead of holding it all', async () => {
    const log = await bigEntryLog((i) => T0 + i * 1_000);
    try {
      const error = await failureOf(
        readVersionLog({
          client: log.client,
          objectId: 's-1',
          sortOrder: undefined,
          seenAmong: () => Promise.resolve(new Set<string>()),
          sizes: new PageSizes(),
        }),
      );
      expect(error?.code).toBe('VERSION_LOG_TOO_LONG');
      expect(error?.message).toMatch(/holds more than \d+ bytes of entries to read/);
    } finally {
      await log.close();
    }
  });
});
