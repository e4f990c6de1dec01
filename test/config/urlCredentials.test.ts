import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAppConfig } from '../../src/cli/loadAppConfig.js';
import { scrubSecrets } from '../../src/secrets/secretRegistry.js';
import { redactUrlCredentials } from '../../src/secrets/urlCredentials.js';
import { makeTempDir } from '../support/tempDir.js';

describe('redactUrlCredentials', () => {
  it.each([
    ['amqp://bob:S3cr3tPW@mq.example:5672/vhost', 'amqp://<redacted>@mq.example:5672/vhost'],
    ['redis://:token123@cache:6379', 'redis://<redacted>@cache:6379'],
    ['nats://s3cr3t-token@nats:4222', 'nats://<redacted>@nats:4222'],
    ['mqtts://user:p%40ss@broker', 'mqtts://<redacted>@broker'],
    ['cannot connect to "amqp://bob:pw@h" now', 'cannot connect to "amqp://<redacted>@h" now'],
    ['amqp://mq.example:5672 (no credentials)', 'amqp://mq.example:5672 (no credentials)'],
    ['mail bob@example.com', 'mail bob@example.com'],
  ])('%s', (input, expected) => {
    expect(redactUrlCredentials(input)).toBe(expected);
  });

  it('is part of scrubSecrets, which every log line and status goes through', () => {
    expect(scrubSecrets('lost amqp://bob:S3cr3tPW@mq')).toBe('lost amqp://<redacted>@mq');
  });
});

// Broker URLs with passwords were printed in full in configuration errors.
describe('a configuration error about a sink whose URL holds a password', () => {
  it.each([
    ['rabbitmq', 'amqp://bob:S3cr3tPW@127.0.0.1:5672', 'exchange: { name: 42 }'],
    ['nats', 'nats://bob:S3cr3tPW@127.0.0.1:4222', 'timeoutMs: -1'],
    ['mqtt', 'mqtt://bob:S3cr3tPW@127.0.0.1:1883', 'timeoutMs: -1'],
    ['redis-streams', 'redis://bob:S3cr3tPW@127.0.0.1:6379', 'timeoutMs: -1'],
    ['rabbitmq', 'amqpx://bob:S3cr3tPW@127.0.0.1:5672', ''],
  ])('%s (%s) does not show the password', (type, url, extra) => {
    const dir = makeTempDir();
    const file = join(dir, 'c.yaml');
    writeFileSync(
      file,
      `api: { baseUrl: "https://x.example", apiKey: "k-123456" }\nsinks:\n  - { name: q, type: ${type}, url: "${url}"${extra ? `, ${extra}` : ''} }\n`,
    );
    let message = '';
    try {
      loadAppConfig({ configFlag: file, env: {} });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('sinks[0]');
    expect(message).not.toContain('S3cr3tPW');
  });
});
