import { connect as amqpConnect } from 'amqplib';
import { Redis } from 'ioredis';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import type { BenchRow } from '../benchTable.js';
import { drainThroughput } from '../drainThroughput.js';

const TAG = `cfbench${process.pid}`;

/** NATS JetStream: every publish acknowledged (target: 5,000 events/s). */
export async function natsDelivery(count: number): Promise<BenchRow> {
  try {
    return await drainThroughput(
      'nats (JetStream acks)',
      {
        name: 'nats',
        type: 'nats',
        subject: `${TAG}.{log}.{event}`,
        stream: { name: `CF_${TAG}`, create: true },
        delivery: { maxInFlight: 4 },
      },
      count,
    );
  } finally {
    const nc = await natsConnect({ servers: 'nats://127.0.0.1:4222' });
    await (await jetstreamManager(nc)).streams.delete(`CF_${TAG}`).catch(() => undefined);
    await nc.close();
  }
}

/** RabbitMQ: persistent messages into a bound durable queue, publisher confirms (target: 2,000 events/s). */
export async function rabbitmqDelivery(count: number): Promise<BenchRow> {
  const connection = await amqpConnect('amqp://guest:guest@127.0.0.1:5672');
  const channel = await connection.createChannel();
  const exchange = `cf.${TAG}`;
  await channel.assertExchange(exchange, 'topic', { durable: true });
  await channel.assertQueue(exchange, { durable: true });
  await channel.bindQueue(exchange, exchange, '#');
  try {
    return await drainThroughput(
      'rabbitmq (confirms, durable queue)',
      { name: 'rabbit', type: 'rabbitmq', exchange: { name: exchange, declare: true } },
      count,
    );
  } finally {
    await channel.deleteQueue(exchange);
    await channel.deleteExchange(exchange);
    await connection.close();
  }
}

/** Redis Streams: XADD pipelined per batch (target: 5,000 events/s). */
export async function redisDelivery(count: number): Promise<BenchRow> {
  try {
    return await drainThroughput(
      'redis-streams (pipelined XADD)',
      { name: 'redis', type: 'redis-streams', prefix: TAG },
      count,
    );
  } finally {
    const redis = new Redis('redis://127.0.0.1:6379');
    const keys = await redis.keys(`${TAG}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
}

/** MQTT: QoS 1, every PUBACK (no target in the issue; for comparison). */
export function mqttDelivery(count: number): Promise<BenchRow> {
  return drainThroughput('mqtt (QoS 1)', { name: 'mqtt', type: 'mqtt', prefix: TAG, clientId: `${TAG}-bench` }, count);
}
