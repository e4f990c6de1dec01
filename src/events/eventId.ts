import { createHash } from 'node:crypto';
import { LOGS, type LogKind } from '../logs.js';

/**
 * The CloudEvent id of an activity entry.
 *
 * Entry ids are opaque (spec 2.8) and only promised unique within a log, so the id hashes the log,
 * the object and the entry id together. That makes it:
 * - stable: the same entry gives the same id on a re-poll, after a restart and on replay;
 * - unique across the three logs and across objects;
 * - short (at most 64 characters) and free of `.`, so consumers can use it as an Idempotency-Key
 *   (at most 200 characters, spec 8) and as a Standard Webhooks `webhook-id`.
 * Format: `<log slug>_<43 base64url characters of SHA-256>`, e.g. `career_3q2…`.
 */
export function eventIdFor(log: LogKind, objectId: string, entryId: string): string {
  const digest = createHash('sha256').update(`${log}\u0000${objectId}\u0000${entryId}`).digest('base64url');
  return `${LOGS[log].slug}_${digest}`;
}
