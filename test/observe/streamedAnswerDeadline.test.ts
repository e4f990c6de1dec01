import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { streamEvents } from '../../src/feed/eventStream.js';
import { JournalSignal } from '../../src/feed/journalSignal.js';
import {
  httpConfigSchema,
  METRICS_FAILED_BODY,
  startHealthServer,
  type HealthServer,
} from '../../src/observe/healthServer.js';
import type { JournalStore } from '../../src/store/changefeedStore.js';
import { writeWithin } from '../../src/writeWithin.js';

/** Far more than the socket buffers of both ends hold: a client that never reads stops it early. */
const PARTS = 2_000;
const PART = 'x'.repeat(256 * 1024);

let server: HealthServer | undefined;
let plain: Server | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const s of sockets.splice(0)) s.destroy();
  await server?.close();
  server = undefined;
  plain?.closeAllConnections();
  await new Promise((resolve) => (plain ? plain.close(resolve) : resolve(undefined)));
  plain = undefined;
});

/** Connects, sends `request` and never reads a byte of the answer. */
function silentReader(port: number, request: string): void {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.pause();
  socket.on('error', () => undefined);
  socket.write(request);
}

/**
 * A response whose client takes what it was sent only when told, so many bytes at a time, as a
 * socket read slowly does: a write counts as taken once all of its bytes were.
 */
class SlowClient extends Writable {
  private readonly pending: { bytes: Buffer; at: number; taken: () => void }[] = [];
  private readonly received: Buffer[] = [];

  constructor() {
    super({ highWaterMark: 16 * 1024 });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, taken: () => void): void {
    this.pending.push({ bytes: chunk, at: 0, taken });
  }

  /** Takes up to `bytes` of what waits. */
  take(bytes: number): void {
    for (let left = bytes; left > 0 && this.pending.length > 0;) {
      const head = this.pending[0]!;
      const n = Math.min(left, head.bytes.length - head.at);
      this.received.push(head.bytes.subarray(head.at, head.at + n));
      head.at += n;
      left -= n;
      if (head.at === head.bytes.length) {
        this.pending.shift();
        head.taken();
      }
    }
  }

  get text(): string {
    return Buffer.concat(this.received).toString('utf8');
  }
}

/** A journal of endless large events, counting the pages read. */
function endlessJournal(): { journal: JournalStore; pages: () => number } {
  let pages = 0;
  const journal = {
    page: (after: number) => {
      pages++;
      return Promise.resolve({
        events: [{ seq: after + 1, payload: `{"p":"${PART}"}` }],
        next: after + 1,
        reachedHead: false,
      });
    },
  } as unknown as JournalStore;
  return { journal, pages: () => pages };
}

/** Streams `journal` to `res` from its start until `abort`, with the write deadline `writeTimeoutMs`. */
function streamTo(
  res: ServerResponse,
  journal: JournalStore,
  writeTimeoutMs: number,
  abort: AbortSignal,
): Promise<void> {
  const options = {
    journal,
    signal: new JournalSignal(systemClock),
    clock: systemClock,
    heartbeatMs: 60_000,
    maxBytes: 1_048_576,
    writeTimeoutMs,
  };
  return streamEvents(res, 0, { after: 0, limit: 100, log: undefined, type: undefined, waitMs: 0 }, options, abort);
}

describe('streamed answers of the daemon', () => {
  it('keeps the answer of a client that reads steadily, however slowly a part goes, and splits no character', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    // 2 MB, one part (as a metric of 5,000 tenants, or the whole HTTP/1.0 exposition), an emoji
    // (a surrogate pair) at every 64 Ki units.
    const part = `${'x'.repeat(65_535)}\u{1F600}`.repeat(32);
    const client = new SlowClient();
    let settled = false;
    const written = writeWithin(client, part, 1_000).then(() => {
      settled = true;
    });
    // 100 KB taken, then 0.6 of the deadline without taking anything, again and again: the part
    // takes 13 s to go, the client never stopped reading for the deadline.
    while (!settled && !client.destroyed) {
      client.take(100 * 1024);
      await new Promise((resolve) => setImmediate(resolve));
      vi.advanceTimersByTime(600);
    }
    await written;
    client.take(Number.MAX_SAFE_INTEGER);
    expect(client.destroyed).toBe(false);
    expect(client.text === part).toBe(true);
  });

  it('cuts off a /metrics scraper that never reads after http.writeTimeoutSeconds, and stops rendering for it', async () => {
    let taken = 0;
    let ended!: (outcome: string) => void;
    const rendering = new Promise<string>((resolve) => (ended = resolve));
    server = await startHealthServer(httpConfigSchema.parse({ port: 0, writeTimeoutSeconds: 1 }), {
      alive: () => true,
      readiness: () => [],
      metrics: {
        contentType: 'text/plain; version=0.0.4',
        async write(write) {
          try {
            for (; taken < PARTS; taken++) await write(PART);
            ended('rendered whole');
          } catch (error) {
            ended(`stopped: ${(error as Error).message}`);
            throw error;
          }
        },
      },
    });
    const url = new URL(server.url);
    silentReader(Number(url.port), `GET /metrics HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
    // Without a deadline the exposition waits on 'drain' for ever and this never settles.
    expect(await rendering).toBe('stopped: the scraper left');
    expect(taken).toBeLessThan(PARTS / 4);
  });

  it('answers a failed exposition with a fixed body and a stable code, the error going to the log', async () => {
    const logged: unknown[] = [];
    server = await startHealthServer(httpConfigSchema.parse({ port: 0 }), {
      alive: () => true,
      readiness: () => [],
      metrics: {
        contentType: 'text/plain; version=0.0.4',
        write: () => Promise.reject(new Error('connect ECONNREFUSED db.internal:5432 as role changefeed_admin')),
      },
      logger: { warn: (fields: unknown) => logged.push(fields) },
    });
    const answer = await fetch(`${server.url}/metrics`);
    expect(answer.status).toBe(500);
    const body = await answer.text();
    expect(body).toBe(METRICS_FAILED_BODY);
    expect(body).toMatch(/^metrics-unavailable: /);
    expect(logged).toEqual([expect.objectContaining({ code: 'metrics-unavailable', err: expect.any(Error) })]);
  });

  it('ends an event stream (feed, console tail) whose client never reads after its write timeout', async () => {
    const { journal, pages } = endlessJournal();
    let streamed!: Promise<void>;
    plain = createServer((req, res) => {
      const abort = new AbortController();
      res.once('close', () => abort.abort());
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      streamed = streamTo(res, journal, 1_000, abort.signal);
    });
    await new Promise<void>((resolve) => plain!.listen(0, '127.0.0.1', resolve));
    const { port } = plain.address() as AddressInfo;
    silentReader(port, 'GET /stream HTTP/1.1\r\nHost: x\r\n\r\n');
    while (streamed === undefined) await new Promise((resolve) => setImmediate(resolve));
    // Without a deadline the stream waits on 'drain' for ever, holding its slot.
    await streamed;
    expect(pages()).toBeLessThan(PARTS / 4);
  });

  it('ends a stream waiting on a client that does not read as soon as the feed closes, not at the deadline', async () => {
    // A client that takes nothing: once its buffer is full no 'drain' ever comes (a socket's
    // kernel buffers would take megabytes first, and drain, whenever the test looked).
    const client = new SlowClient();
    // The feed's close (a tenant handed over, the daemon stopping) aborts every stream; the
    // deadline is far past the test's own timeout, so only the close can end the wait.
    const close = new AbortController();
    const streamed = streamTo(client as unknown as ServerResponse, endlessJournal().journal, 3_600_000, close.signal);
    await expect.poll(() => client.writableNeedDrain).toBe(true);
    close.abort();
    await streamed;
    expect(client.destroyed).toBe(false);
  });
});
