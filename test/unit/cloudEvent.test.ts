import { CloudEvent, ValidationError } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../src/api/activityEntry.js';
import { buildCloudEvent, eventsConfigSchema, type ChangeCloudEvent } from '../../src/events/cloudEvent.js';
import { eventIdFor } from '../../src/events/eventId.js';
import type { LogKind } from '../../src/logs.js';

const config = eventsConfigSchema.parse({ typePrefix: 'com.acme.skills', nullEventName: 'unknown_event' });
const entry = (over: Partial<ActivityEntry> & Record<string, unknown> = {}): ActivityEntry => ({
  id: 'e-42',
  event: 'level_added',
  description: 'Added level Senior',
  performedById: 'p-3',
  performedAt: '2026-03-01T10:04:31Z',
  ...over,
});
const build = (
  log: LogKind,
  objectId: string,
  e: ActivityEntry = entry(),
  baseUrl = 'https://svc.example',
): ChangeCloudEvent => buildCloudEvent({ tenant: 'default', log, objectId, entry: e, baseUrl }, config);
/** What a consumer parses from the wire, validated by the CloudEvents SDK (throws when invalid). */
const validated = (event: ChangeCloudEvent): CloudEvent<unknown> =>
  new CloudEvent<unknown>(JSON.parse(JSON.stringify(event)) as object);

describe('buildCloudEvent', () => {
  it('builds a valid CloudEvents 1.0 event of a career entry, entryid extension included', () => {
    const event = build('career', 'c-17');
    expect(event).toMatchObject({
      specversion: '1.0',
      id: eventIdFor('career', 'c-17', 'e-42'),
      source: 'https://svc.example/api/v1/careers/c-17/activity',
      type: 'com.acme.skills.career.level_added',
      subject: 'c-17',
      time: '2026-03-01T10:04:31.000Z',
      datacontenttype: 'application/json',
      entryid: 'e-42',
    });
    const ce = validated(event);
    expect(ce.validate()).toBe(true);
    expect(ce.entryid).toBe('e-42');
    expect(ce.type).toBe(event.type);
  });

  it('names the log in the type: career, skill, identity_provider', () => {
    expect(build('skill', 's-1').type).toBe('com.acme.skills.skill.level_added');
    expect(build('identity_provider', '').type).toBe('com.acme.skills.identity_provider.level_added');
  });

  it('uses nullEventName when the entry has a null, missing or empty event', () => {
    expect(build('career', 'c-1', entry({ event: null })).type).toBe('com.acme.skills.career.unknown_event');
    expect(build('career', 'c-1', { id: 'e-1' }).type).toBe('com.acme.skills.career.unknown_event');
    expect(build('career', 'c-1', entry({ event: '' })).type).toBe('com.acme.skills.career.unknown_event');
  });

  it('has no subject for the company-wide identity-provider log, and still validates', () => {
    const event = build('identity_provider', '', entry({ id: 'idp-9', event: 'user_created' }));
    expect(Object.keys(event)).not.toContain('subject');
    expect(event.source).toBe('https://svc.example/api/v1/identity-provider-events');
    expect(validated(event).subject).toBeUndefined();
  });

  it('normalises performedAt to RFC 3339 UTC', () => {
    expect(build('career', 'c-1', entry({ performedAt: '2026-03-01T12:04:31+02:00' })).time).toBe(
      '2026-03-01T10:04:31.000Z',
    );
    expect(build('career', 'c-1', entry({ performedAt: '2026-03-01T10:04:31.5Z' })).time).toBe(
      '2026-03-01T10:04:31.500Z',
    );
  });

  it('leaves time out when performedAt is null or absent, and still validates', () => {
    const event = build('skill', 's-1', { id: 'e-1', event: null, performedAt: null });
    expect(Object.keys(event)).not.toContain('time');
    expect(validated(event).validate()).toBe(true);
  });

  it('carries the entry in data exactly as received, unknown fields included', () => {
    const received = entry({
      relatedPersonId: 'p-9',
      bulkGroupId: null,
      nested: { a: [1, 'two', null] },
      emptyString: '',
    });
    const event = build('career', 'c-1', received);
    expect(JSON.parse(JSON.stringify(event.data))).toEqual(JSON.parse(JSON.stringify(received)));
    expect(validated(event).data).toEqual(received);
  });

  it('joins base URL and path without doubling slashes, and encodes the object id', () => {
    expect(build('skill', 'a b/c', entry(), 'https://svc.example/tenant/').source).toBe(
      'https://svc.example/tenant/api/v1/skills/a%20b%2Fc/activity',
    );
  });

  it('is checked by a validator that does reject a bad extension name', () => {
    // Guards the tests above: the SDK validates on construction, so their passing means something.
    expect(() => new CloudEvent({ ...build('career', 'c-1'), entry_id: 'x' })).toThrow(ValidationError);
  });
});
