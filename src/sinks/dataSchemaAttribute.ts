import { z } from 'zod';
import { SCHEMA_FILE } from '../events/eventSchemas.js';
import type { LogKind } from '../logs.js';
import type { OutboundEvent, Sink } from '../sinkContract/sink.js';

/** The opt-in `dataschema` setting of the webhook and broker sinks. */
export const dataschemaSchema = z
  .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
  .refine((url) => url.endsWith('/'), 'end the base URL with /')
  .optional()
  .describe(
    'Base URL where you publish docs/events (`changefeed schema --out DIR`). When set, every event this ' +
      'sink sends carries the CloudEvents `dataschema` attribute `<base><log>-data.schema.json`. Off by ' +
      'default, since the URL is yours to host.',
  );

/** The event's JSON with `dataschema` added before `data`. */
export function addDataSchema(json: string, log: LogKind, base: string): string {
  const { data, ...attributes } = JSON.parse(json) as Record<string, unknown>;
  return JSON.stringify({ ...attributes, dataschema: `${base}${SCHEMA_FILE(`${log}-data`)}`, data });
}

/** `sink`, sending every event with the `dataschema` attribute. */
export function withDataSchema(sink: Sink, base: string): Sink {
  return {
    get name() {
      return sink.name;
    },
    type: sink.type,
    limits: sink.limits,
    connect: (signal) => sink.connect(signal),
    write: (batch, signal) =>
      sink.write(
        batch.map((event): OutboundEvent => ({ ...event, json: addDataSchema(event.json, event.log, base) })),
        signal,
      ),
    close: () => sink.close(),
  };
}
