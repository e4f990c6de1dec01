import { z } from 'zod';
import { FileSink, fileSinkConfigSchema } from './fileSink.js';
import type { Sink } from './sink.js';
import { StdoutSink, stdoutSinkConfigSchema } from './stdoutSink.js';

/**
 * Every sink type, in one literal registry: its config schema (a variant of the `type`-tagged
 * union) and how to build it. Adding a sink means adding one file and one line here.
 */
export const sinkConfigSchema = z.discriminatedUnion('type', [fileSinkConfigSchema, stdoutSinkConfigSchema]);

export type SinkConfig = z.infer<typeof sinkConfigSchema>;

export interface SinkContext {
  /** Where stdout-like sinks write; tests pass a stream. */
  stdout?: NodeJS.WritableStream;
}

export function createSink(config: SinkConfig, context: SinkContext = {}): Sink {
  switch (config.type) {
    case 'file':
      return new FileSink(config);
    case 'stdout':
      return new StdoutSink(config, context.stdout);
  }
}
