import { z } from 'zod';
import { sinkCommonSchema } from '../sinkContract/deliveryConfig.js';
import type { ChangeCloudEvent } from '../events/cloudEvent.js';
import type { OutboundEvent, Sink } from '../sinkContract/sink.js';

export const stdoutSinkConfigSchema = sinkCommonSchema
  .extend({
    type: z.literal('stdout'),
    format: z
      .enum(['json', 'pretty'])
      .default('json')
      .describe('`json`: one CloudEvent per line, for piping; `pretty`: one readable line per event, for people.'),
  })
  .strict();

export type StdoutSinkConfig = z.infer<typeof stdoutSinkConfigSchema>;

/** Writes events to standard output (logs go to stderr, so stdout carries only events). */
export class StdoutSink implements Sink {
  readonly type = 'stdout';
  readonly name: string;
  readonly limits = { maxBatchSize: 500, maxInFlight: 1 };

  constructor(
    private readonly config: StdoutSinkConfig,
    private readonly out: NodeJS.WritableStream = process.stdout,
  ) {
    this.name = config.name;
  }

  async connect(): Promise<void> {}

  async write(batch: readonly OutboundEvent[]): Promise<void> {
    const text = batch.map((e) => `${this.config.format === 'pretty' ? prettyLine(e) : e.json}\n`).join('');
    await new Promise<void>((resolve, reject) => {
      this.out.write(text, (error) => (error ? reject(error) : resolve()));
    });
  }

  async close(): Promise<void> {}
}

/** `12:04:31  career c-17  level_added  "Added level Senior"  by p-3` */
export function prettyLine(event: OutboundEvent): string {
  const ce = JSON.parse(event.json) as ChangeCloudEvent;
  const time = ce.time ? ce.time.slice(11, 19) : '--:--:--';
  const where = event.objectId ? `${event.log} ${event.objectId}` : 'identity provider';
  const name = ce.type.split('.').at(-1) ?? ce.type;
  const description = typeof ce.data.description === 'string' ? `  "${ce.data.description}"` : '';
  const by = typeof ce.data.performedById === 'string' ? `  by ${ce.data.performedById}` : '';
  return `${time}  ${where}  ${name}${description}${by}`;
}
