import { createHash } from 'node:crypto';
import type { LogKind } from '../logs.js';

/**
 * The name each log is hashed under. It is part of every id ever given out, so it is frozen: the
 * identity-provider log keeps the camel-case name it was first hashed under, and its ids stay
 * the ids consumers already deduplicate on.
 */
const HASHED_NAME: Readonly<Record<LogKind, string>> = {
  career: 'career',
  skill: 'skill',
  identity_provider: 'identityProvider',
};

/**
 * The CloudEvent id of an activity entry.
 *
 * Entry ids are opaque (spec 2.8) and only promised unique within a log, so the id hashes the log,
 * the object and the entry id together. That makes it:
 * - stable: the same entry gives the same id on a re-poll, after a restart and on replay;
 * - unique across the three logs and across objects;
 * - short (at most 64 characters) and free of `.`, so consumers can use it as an Idempotency-Key
 *   (at most 200 characters, spec 8) and as a Standard Webhooks `webhook-id`.
 * Format: `<log>_<43 base64url characters of SHA-256>`, e.g. `career_3q2…`.
 */
export function eventIdFor(log: LogKind, objectId: string, entryId: string): string {
  const digest = createHash('sha256')
    .update(`${HASHED_NAME[log]}\u0000${objectId}\u0000${entryId}`)
    .digest('base64url');
  return `${log}_${digest}`;
}
