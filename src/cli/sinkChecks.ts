import { randomUUID } from 'node:crypto';
import { access, constants } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { AppConfig } from '../config/appConfigSchema.js';
import { describeError } from '../errors.js';
import type { OutboundEvent } from '../sinkContract/sink.js';
import { createSink, type SinkConfig } from '../sinks/sinkRegistry.js';
import { checkFailed, type CheckResult } from './checkResult.js';

const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Reaches every sink without delivering an event: brokers connect and verify their stream or
 * exchange (as the sink's own connect does), a webhook endpoint must accept a connection, a file's
 * directory must be writable. With `probeWebhooks`, each webhook also gets one signed test event,
 * opt-in since it reaches a real consumer.
 */
export async function checkSinks(
  config: AppConfig,
  options: { probeWebhooks: boolean; tenant: string },
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const sink of config.sinks) results.push(await checkSink(sink, config, options));
  return results;
}

async function checkSink(
  sinkConfig: SinkConfig,
  config: AppConfig,
  options: { probeWebhooks: boolean; tenant: string },
): Promise<CheckResult> {
  const name = `sink ${sinkConfig.name} (${sinkConfig.type})`;
  if (sinkConfig.type === 'stdout') return { name, ok: true, detail: 'writes to standard output' };
  if (sinkConfig.type === 'file') return checkFileSink(name, sinkConfig.path);
  const sink = createSink(sinkConfig);
  const signal = AbortSignal.timeout(CONNECT_TIMEOUT_MS);
  try {
    await sink.connect(signal);
    if (sinkConfig.type === 'webhook' && options.probeWebhooks) {
      await sink.write([testEvent(config, options.tenant)], signal);
      return { name, ok: true, detail: 'accepted a signed test event' };
    }
    const detail =
      sinkConfig.type === 'webhook'
        ? 'the endpoint accepts connections (no request sent; --probe-sinks sends a signed test event)'
        : 'connected';
    return { name, ok: true, detail };
  } catch (error) {
    return checkFailed(
      name,
      describeError(error),
      `check sinks "${sinkConfig.name}": its address, credentials and that the destination exists`,
    );
  } finally {
    await sink.close();
  }
}

async function checkFileSink(name: string, path: string): Promise<CheckResult> {
  // The sink creates missing directories: the nearest one that exists must be writable.
  let dir = dirname(path);
  for (;;) {
    try {
      await access(dir, constants.W_OK);
      return { name, ok: true, detail: `${dir} is writable` };
    } catch (error) {
      const parent = dirname(dir);
      if ((error as { code?: string }).code !== 'ENOENT' || parent === dir) {
        return checkFailed(
          name,
          `cannot write under ${dir}: ${(error as Error).message}`,
          'choose a path the daemon may write, or fix the permissions',
        );
      }
      dir = parent;
    }
  }
}

/** A CloudEvent that says what it is, so a consumer that logs it is not misled. */
function testEvent(config: AppConfig, tenant: string): OutboundEvent {
  const id = `check-${randomUUID()}`;
  const type = `${config.events.typePrefix}.check`;
  const json = JSON.stringify({
    specversion: '1.0',
    tenant,
    id,
    source: 'skills-changefeed/check',
    type,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: { message: 'changefeed check --probe-sinks: a test request, not a change' },
  });
  return { seq: 0, tenant, id, type, log: 'career', objectId: '', orderingKey: 'check', json, attempt: 1 };
}
