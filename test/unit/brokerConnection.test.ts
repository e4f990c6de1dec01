import { describe, expect, it } from 'vitest';
import { SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';
import { cannotConnect, ConnectionSlot, type BrokerPeer } from '../../src/sinks/brokerConnection.js';

describe('ConnectionSlot', () => {
  it('lets a write release only the connection it holds, so an older one cannot clear a newer one', () => {
    const slot = new ConnectionSlot<{ id: number }>();
    const old = { id: 1 };
    const reconnected = { id: 2 };
    slot.hold(old);
    slot.hold(reconnected);
    expect(slot.release(old)).toBe(false);
    expect(slot.current).toBe(reconnected);
    expect(slot.release(reconnected)).toBe(true);
    expect(slot.current).toBeUndefined();
    expect(slot.release(reconnected)).toBe(false);
  });

  it('empties on take and hands back what it held, once', () => {
    const slot = new ConnectionSlot<string>();
    expect(slot.take()).toBeUndefined();
    slot.hold('connection');
    expect(slot.take()).toBe('connection');
    expect(slot.current).toBeUndefined();
    expect(slot.take()).toBeUndefined();
  });
});

describe('cannotConnect', () => {
  const redis: BrokerPeer = {
    name: 'Redis',
    address: 'redis://127.0.0.1:6379/0',
    loginRefused: /WRONGPASS|NOAUTH|NOPERM/,
  };
  const mqtt: BrokerPeer = {
    name: 'the MQTT broker',
    address: 'mqtt://127.0.0.1:1883',
    loginRefused: /username or password|not authorized/i,
  };

  it.each([
    {
      peer: redis,
      reason: 'connect ECONNREFUSED 127.0.0.1:6379',
      message: 'cannot connect to Redis at redis://127.0.0.1:6379/0: connect ECONNREFUSED 127.0.0.1:6379',
    },
    {
      peer: redis,
      reason: 'WRONGPASS invalid username-password pair or user is disabled.',
      message:
        'cannot connect to Redis at redis://127.0.0.1:6379/0: WRONGPASS invalid username-password pair or user is ' +
        'disabled.; Redis refused the login: check username and password',
    },
    {
      peer: mqtt,
      reason: 'Connection refused: Bad username or password',
      message:
        'cannot connect to the MQTT broker at mqtt://127.0.0.1:1883: Connection refused: Bad username or password; ' +
        'the MQTT broker refused the login: check username and password',
    },
    {
      peer: mqtt,
      reason: 'connack timeout',
      message: 'cannot connect to the MQTT broker at mqtt://127.0.0.1:1883: connack timeout',
    },
    {
      peer: { name: 'the consumer', address: '/run/consumer.sock' },
      reason: 'not authorized',
      message: 'cannot connect to the consumer at /run/consumer.sock: not authorized',
    },
  ])('$peer.name: "$reason"', ({ peer, reason, message }) => {
    const error = cannotConnect(peer, reason);
    expect(error).toBeInstanceOf(SinkUnavailableError);
    expect(error.code).toBe('SINK_UNAVAILABLE');
    expect(error.message).toBe(message);
  });

  it('keeps the cause for the logs', () => {
    const cause = new Error('ECONNRESET');
    expect(cannotConnect(redis, 'reset', cause).cause).toBe(cause);
    expect(cannotConnect(redis, 'reset').cause).toBeUndefined();
  });
});
