import { z } from 'zod';
import { LOGS, type LogKind } from '../logs.js';
import type { ActivityEntry } from '../api/activityEntry.js';
import { eventIdFor } from './eventId.js';

export const eventsConfigSchema = z
  .object({
    typePrefix: z
      .string()
      .regex(/^[a-z0-9]+([._-][a-z0-9]+)*$/, 'use lowercase letters, digits and . _ -')
      .default('com.skills.changefeed')
      .describe('Prefix of every CloudEvent `type`: `<typePrefix>.<log>.<event>`.'),
    nullEventName: z
      .string()
      .regex(/^[a-z0-9_]+$/, 'use lowercase letters, digits and _')
      .default('unspecified')
      .describe('Used in place of `<event>` in the type when an entry has a null or missing `event`.'),
  })
  .strict();

export type EventsConfig = z.infer<typeof eventsConfigSchema>;

/**
 * The event every sink receives: a CloudEvents 1.0 event in JSON (structured mode).
 *
 * - `tenant`: the company the event belongs to (extension attribute): the tenant file's name, or
 *   `default` when the config has no `tenants.dir`.
 * - `id`: see eventIdFor: stable per entry, unique across logs, no `.`, at most 64 characters.
 * - `source`: the log's URL, e.g. `https://svc.example/api/v1/careers/c-1/activity`.
 * - `type`: `<typePrefix>.<log>.<event>` with log one of career, skill, identity_provider.
 * - `subject`: the career or skill id; absent for the company-wide identity-provider log.
 * - `time`: the entry's `performedAt` (normalised to RFC 3339 UTC); absent when null.
 * - `entryid`: the service's own entry id (extension attribute).
 * - `data`: the entry exactly as received, unknown fields included.
 */
export interface ChangeCloudEvent {
  specversion: '1.0';
  tenant: string;
  id: string;
  source: string;
  type: string;
  subject?: string;
  time?: string;
  datacontenttype: 'application/json';
  entryid: string;
  data: ActivityEntry;
}

export function buildCloudEvent(
  args: { tenant: string; log: LogKind; objectId: string; entry: ActivityEntry; baseUrl: string },
  config: EventsConfig,
): ChangeCloudEvent {
  const descriptor = LOGS[args.log];
  const eventName = args.entry.event ? args.entry.event : config.nullEventName;
  const event: ChangeCloudEvent = {
    specversion: '1.0',
    tenant: args.tenant,
    id: eventIdFor(args.log, args.objectId, args.entry.id),
    source: `${args.baseUrl.replace(/\/+$/, '')}${descriptor.path(descriptor.perObject ? args.objectId : undefined)}`,
    type: `${config.typePrefix}.${args.log}.${eventName}`,
    datacontenttype: 'application/json',
    entryid: args.entry.id,
    data: args.entry,
  };
  if (descriptor.perObject) event.subject = args.objectId;
  if (args.entry.performedAt) event.time = new Date(args.entry.performedAt).toISOString();
  return event;
}
