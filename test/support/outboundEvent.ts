import { buildCloudEvent, eventsConfigSchema } from '../../src/events/cloudEvent.js';
import { logKey, type LogKind } from '../../src/logs.js';
import type { OutboundEvent } from '../../src/sinkContract/sink.js';

const eventsConfig = eventsConfigSchema.parse({});

export interface TestEventOptions {
  log?: LogKind;
  /** Career or skill id; ignored for the identity-provider log. Default `car_1`. */
  objectId?: string;
  /** The entry's event name. Default `level_added`. */
  name?: string;
  description?: string;
  /** The tenant the event belongs to. Default `default`. */
  tenant?: string;
}

/** Event `n` as the engine hands it to a sink: a real CloudEvent built from an entry `act_<n>`. */
export function outboundEvent(n: number, options: TestEventOptions = {}): OutboundEvent {
  const log = options.log ?? 'career';
  const objectId = log === 'identity_provider' ? '' : (options.objectId ?? 'car_1');
  const tenant = options.tenant ?? 'default';
  const entry = {
    id: `act_${n}`,
    event: options.name ?? 'level_added',
    description: options.description ?? `Level ${n}`,
    performedAt: '2026-01-01T00:00:00Z',
  };
  const ce = buildCloudEvent({ tenant, log, objectId, entry, baseUrl: 'https://skills.example' }, eventsConfig);
  return {
    seq: n,
    tenant,
    id: ce.id,
    type: ce.type,
    log,
    objectId,
    orderingKey: logKey({ log, objectId }),
    json: JSON.stringify(ce),
    attempt: 1,
  };
}
