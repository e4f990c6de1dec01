import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { eventIdFor } from '../../src/events/eventId.js';
import { LOG_KINDS } from '../../src/logs.js';
import { signWebhook } from '../../src/sinks/standardWebhookSignature.js';

/** Idempotency-Key limit of the service's spec (section 8), which consumers may reuse. */
const IDEMPOTENCY_KEY_MAX = 200;

describe('eventIdFor', () => {
  it('gives the same id for the same entry, across calls and across releases', () => {
    // Pinned: a change here re-emits every event under a new id after an upgrade.
    expect(eventIdFor('career', 'c-1', 'e-1')).toBe('career_Dh-H6PILBJiiy93X4Ez_xhdlOa0dLXs-vZnKxXFR2xY');
    expect(eventIdFor('career', 'c-1', 'e-1')).toBe(eventIdFor('career', 'c-1', 'e-1'));
  });

  it('gives every log the id it has always given, whatever the log is called inside', () => {
    // Pinned per log: renaming a log kind must not re-emit its events under new ids.
    expect(eventIdFor('skill', 's-1', 'e-1')).toBe('skill_w_m5Ffg4OhPofcYFgeWrYA0IfZ1wi9ClywM5_2_Xtso');
    expect(eventIdFor('identity_provider', '', 'idp-1')).toBe(
      'identity_provider_T6GCCTv_lTxpQAmVLA5rsRUUOcVRJ7zJIziqSpxLYh4',
    );
  });

  it('differs across the three logs for the same object and entry id', () => {
    const ids = LOG_KINDS.map((log) => eventIdFor(log, 'x-1', 'e-1'));
    expect(new Set(ids).size).toBe(3);
    expect(ids.map((id) => id.split('_').slice(0, -1).join('_'))).toEqual(['career', 'skill', 'identity_provider']);
  });

  it('differs across objects of one log for the same entry id', () => {
    expect(eventIdFor('career', 'c-1', 'e-1')).not.toBe(eventIdFor('career', 'c-2', 'e-1'));
  });

  it('does not confuse where the object id ends and the entry id begins', () => {
    const pairs: [string, string][] = [
      ['a', 'b:c'],
      ['a:b', 'c'],
      ['a/', 'b'],
      ['a', '/b'],
      ['a_', 'b'],
      ['a', '_b'],
    ];
    expect(new Set(pairs.map(([o, e]) => eventIdFor('skill', o, e))).size).toBe(pairs.length);
  });

  it('stays short, header-safe and free of "." whatever the ids contain', () => {
    const long = 'é.'.repeat(5_000);
    for (const log of LOG_KINDS) {
      for (const [objectId, entryId] of [
        ['c-1', 'e-1'],
        [long, long],
        ['', 'with spaces and . dots'],
      ] as const) {
        const id = eventIdFor(log, objectId, entryId);
        expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(id).not.toContain('.');
        expect(id.length).toBeLessThanOrEqual(64);
        expect(id.length).toBeLessThanOrEqual(IDEMPOTENCY_KEY_MAX);
      }
    }
  });

  it('works as a Standard Webhooks webhook-id: our signature verifies with the reference library', () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const id = eventIdFor('identity_provider', '', 'idp-1');
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ id, hello: 'world' });
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook([secret], id, timestamp, body),
    };
    expect(new Webhook(secret).verify(body, headers)).toEqual({ id, hello: 'world' });
    // The signature covers the id: another event's id does not verify.
    expect(() =>
      new Webhook(secret).verify(body, { ...headers, 'webhook-id': eventIdFor('identity_provider', '', 'idp-2') }),
    ).toThrow();
  });
});
