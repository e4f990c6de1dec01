import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { sinkCommonSchema } from '../deliver/deliveryConfig.js';
import type { OutboundEvent, Sink } from './sink.js';
import { SinkUnavailableError } from './sinkErrors.js';

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
  readonly limits = { maxBatchSize: 1000, maxInFlight: 1 };
  private handle: FileHandle | undefined;

  constructor(private readonly config: FileSinkConfig) {}

  get name(): string {
    return this.config.name;
  }

  async connect(): Promise<void> {
    if (this.handle) return;
    try {
      await mkdir(dirname(this.config.path), { recursive: true });
      this.handle = await open(this.config.path, 'a');
    } catch (error) {
      throw new SinkUnavailableError(`cannot open ${this.config.path} for appending: ${(error as Error).message}`, { cause: error });
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
      throw new SinkUnavailableError(`writing to ${this.config.path} failed: ${(error as Error).message}`, { cause: error });
    }
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => undefined);
  }
}
