import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchRow } from '../benchTable.js';
import { drainThroughput } from '../drainThroughput.js';

/** Events per second from a pre-filled outbox into the file sink (one fsync per batch). */
export function fileSinkDelivery(count: number): Promise<BenchRow> {
  const path = join(mkdtempSync(join(tmpdir(), 'changefeed-bench-')), 'events.jsonl');
  return drainThroughput('file sink, outbox pre-filled', { name: 'file', type: 'file', path }, count);
}
