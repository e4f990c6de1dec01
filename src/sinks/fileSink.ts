import { mkdir, open, truncate, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { sinkCommonSchema } from '../sinkContract/deliveryConfig.js';
import type { OutboundEvent, Sink } from '../sinkContract/sink.js';
import { SinkUnavailableError } from '../sinkContract/sinkErrors.js';

export const fileSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('file'),
    path: z.string().min(1).describe('File the events are appended to, one CloudEvent JSON per line (JSON Lines).'),
  })
  .strict();

export type FileSinkConfig = z.infer<typeof fileSinkConfigSchema>;

/** Appends events as JSON Lines; a batch counts as written once fsync returns. */
export class FileSink implements Sink {
  readonly type = 'file';
  readonly name: string;
  readonly limits = { maxBatchSize: 1000, maxInFlight: 1 };
  private handle: FileHandle | undefined;

  constructor(private readonly config: FileSinkConfig) {
    this.name = config.name;
  }

  async connect(): Promise<void> {
    if (this.handle) return;
    try {
      await cutTornTail(this.config.path);
      this.handle = await openForAppend(this.config.path);
    } catch (error) {
      throw new SinkUnavailableError(`cannot open ${this.config.path} for appending: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  async write(batch: readonly OutboundEvent[]): Promise<void> {
    const handle = this.handle;
    if (!handle) throw new SinkUnavailableError(`file sink ${this.name} is not open`);
    const text = batch.map((e) => `${e.json}\n`).join('');
    try {
      await handle.appendFile(text, 'utf8');
      await handle.datasync();
    } catch (error) {
      // The handle may be unusable (disk removed, quota); reopen before the next attempt.
      this.handle = undefined;
      await handle.close().catch(() => undefined);
      throw new SinkUnavailableError(`writing to ${this.config.path} failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => undefined);
  }
}

/** Creates the directory only when the open finds it missing: a `mkdir -p` per connect shows in a many-tenant daemon's CPU. */
async function openForAppend(path: string): Promise<FileHandle> {
  try {
    return await open(path, 'a');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dirname(path), { recursive: true });
  return open(path, 'a');
}

/**
 * A crash in the middle of an append can leave half a line at the end of the file. That batch was
 * never acknowledged, so it will be written again; cut the torn tail so the file stays valid
 * JSON Lines instead of gaining a corrupt line.
 */
async function cutTornTail(path: string): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) return;
    const chunk = Buffer.alloc(Math.min(size, 64 * 1024));
    let end = size;
    while (end > 0) {
      const start = Math.max(0, end - chunk.length);
      const { bytesRead } = await handle.read(chunk, 0, end - start, start);
      const view = chunk.subarray(0, bytesRead);
      if (end === size && view[view.length - 1] === 0x0a) return;
      const newline = view.lastIndexOf(0x0a);
      if (newline >= 0) {
        await truncate(path, start + newline + 1);
        return;
      }
      end = start;
    }
    await truncate(path, 0);
  } finally {
    await handle.close();
  }
}
