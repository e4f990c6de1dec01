import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { ChangefeedError } from '../errors.js';

/** The HMAC key's length: 32 random bytes, shared by the replicas through the store. */
export const TICKET_KEY_BYTES = 32;

/**
 * The HMAC key of feed redirect tickets, shared by the replicas of one store through
 * `changefeed_cluster_keys` (leaseSchema.ts): the first replica to ask inserts 32
 * random bytes, every replica (that one included) reads the row that won. Two replicas starting
 * together each offer a key; the primary key keeps one, and both read it. Never logged: the
 * caller keeps it in memory only.
 */
export async function readFeedTicketKey(pool: Pick<pg.Pool, 'query'>): Promise<Buffer> {
  await pool.query(
    "INSERT INTO changefeed_cluster_keys (name, secret) VALUES ('feed-ticket', $1) ON CONFLICT (name) DO NOTHING",
    [randomBytes(TICKET_KEY_BYTES)],
  );
  const { rows } = await pool.query<{ secret: Buffer }>(
    "SELECT secret FROM changefeed_cluster_keys WHERE name = 'feed-ticket'",
  );
  const secret = rows[0]?.secret;
  if (!Buffer.isBuffer(secret) || secret.length < TICKET_KEY_BYTES)
    throw new ChangefeedError('STORE_ERROR', 'changefeed_cluster_keys holds no usable feed-ticket key');
  return secret;
}
