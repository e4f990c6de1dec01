import { z } from 'zod';
import { withDataSchema } from './dataSchemaAttribute.js';
import { FileSink, fileSinkConfigSchema } from './fileSink.js';
import { MqttSink } from './mqttSink.js';
import { mqttSinkConfigSchema } from './mqttSinkConfig.js';
import { NatsSink } from './natsSink.js';
import { PostgresSink } from './postgresSink.js';
import { postgresSinkConfigSchema } from './postgresSinkConfig.js';
import { natsSinkConfigSchema } from './natsSinkConfig.js';
import { RabbitmqSink } from './rabbitmqSink.js';
import { rabbitmqSinkConfigSchema } from './rabbitmqSinkConfig.js';
import { RedisStreamsSink } from './redisStreamsSink.js';
import { redisStreamsSinkConfigSchema } from './redisStreamsSinkConfig.js';
import type { Sink } from '../sinkContract/sink.js';
import { StdoutSink, stdoutSinkConfigSchema } from './stdoutSink.js';
import { WebhookSink } from './webhookSink.js';
import { webhookSinkConfigSchema } from './webhookSinkConfig.js';

/**
 * Every sink type, in one literal registry: its config schema (a variant of the `type`-tagged
 * union) and how to build it. Adding a sink means adding one file and one entry here.
 */
export const sinkConfigSchema = z.discriminatedUnion('type', [
  fileSinkConfigSchema,
  mqttSinkConfigSchema,
  natsSinkConfigSchema,
  postgresSinkConfigSchema,
  rabbitmqSinkConfigSchema,
  redisStreamsSinkConfigSchema,
  stdoutSinkConfigSchema,
  webhookSinkConfigSchema,
]);

export type SinkConfig = z.infer<typeof sinkConfigSchema>;
export type SinkType = SinkConfig['type'];

export interface SinkContext {
  /** Where stdout-like sinks write; tests pass a stream. */
  stdout?: NodeJS.WritableStream | undefined;
}

type SinkFactories = { [T in SinkType]: (config: Extract<SinkConfig, { type: T }>, context: SinkContext) => Sink };

export const SINK_FACTORIES: SinkFactories = {
  file: (config) => new FileSink(config),
  mqtt: (config) => new MqttSink(config),
  nats: (config) => new NatsSink(config),
  postgres: (config) => new PostgresSink(config),
  rabbitmq: (config) => new RabbitmqSink(config),
  'redis-streams': (config) => new RedisStreamsSink(config),
  stdout: (config, context) => new StdoutSink(config, context.stdout),
  webhook: (config) => new WebhookSink(config),
};

export function createSink(config: SinkConfig, context: SinkContext = {}): Sink {
  const factory = SINK_FACTORIES[config.type] as (config: SinkConfig, context: SinkContext) => Sink;
  const sink = factory(config, context);
  return 'dataschema' in config && config.dataschema ? withDataSchema(sink, config.dataschema) : sink;
}
