import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { readSecretFile } from '../secrets/readSecretFile.js';
import { registerSecret } from '../secrets/secretRegistry.js';

/**
 * The tokens written in `tokens` and those read from `tokenFiles`, each registered as a secret
 * (scrubbed from logs). ConfigError names the file whose token cannot travel in a header.
 */
export function readFeedTokens(tokens: readonly string[], tokenFiles: readonly string[], path: string): string[] {
  const read = tokenFiles.map((file) => {
    const token = readSecretFile(file);
    registerSecret(token);
    if (!/^[\x21-\x7e]{16,}$/.test(token))
      throw new ConfigError(`the token in ${file} cannot be sent in a header`, [
        { path, message: 'write at least 16 printable ASCII characters without spaces' },
      ]);
    return token;
  });
  for (const token of tokens) registerSecret(token);
  return [...tokens, ...read];
}

/** A configured bearer token and what it reads: every tenant, or one. */
export interface FeedTokenGrant {
  token: string;
  /** `all` for a token of the main file's `feed.allTenantsTokens`; else the one tenant it reads. */
  reads: { kind: 'all' } | { kind: 'tenant'; tenant: string };
}

/** Who presented a token: its stable key (for per-token limits) and the tenants it may read. */
export interface FeedReader {
  /** A digest of the token: the same across reloads, never the token itself. */
  readonly key: string;
  readonly allTenants: boolean;
  readonly tenants: ReadonlySet<string>;
}

/**
 * The bearer tokens that may read the feed, each with the tenants it reads. A presented token is
 * hashed and compared with every configured token's hash in constant time, all of them each time
 * and whatever tenant the request names, so neither the comparison, nor the number of
 * comparisons, nor the tenant tells how much of a token was right or which tenants exist.
 */
export class FeedTokens {
  private readonly digests: Buffer[] = [];
  private readonly readers: FeedReader[] = [];

  constructor(grants: readonly FeedTokenGrant[]) {
    const byDigest = new Map<string, { digest: Buffer; allTenants: boolean; tenants: Set<string> }>();
    for (const grant of grants) {
      const digest = digestOf(grant.token);
      const key = digest.toString('hex');
      const entry = byDigest.get(key) ?? { digest, allTenants: false, tenants: new Set<string>() };
      if (grant.reads.kind === 'all') entry.allTenants = true;
      else entry.tenants.add(grant.reads.tenant);
      byDigest.set(key, entry);
    }
    for (const [key, entry] of byDigest) {
      this.digests.push(entry.digest);
      this.readers.push({ key: key.slice(0, 16), allTenants: entry.allTenants, tenants: entry.tenants });
    }
  }

  get size(): number {
    return this.digests.length;
  }

  /** The reader of the token the `Authorization` header carries, or undefined for none or a wrong one. */
  match(authorization: string | undefined): FeedReader | undefined {
    const presented = /^Bearer +([^ ]+) *$/i.exec(authorization ?? '')?.[1];
    const candidate = digestOf(presented ?? '');
    let found = -1;
    this.digests.forEach((known, index) => {
      if (timingSafeEqual(known, candidate) && found === -1) found = index;
    });
    return presented === undefined || found < 0 ? undefined : this.readers[found];
  }

  /**
   * The reader whose key a redirect ticket names, while its token is still configured: a token
   * removed from the files (and so from these tokens at the reload) takes its tickets with it.
   * Compared with every reader's key in constant time, as `match` does.
   */
  reader(key: string): FeedReader | undefined {
    const candidate = digestOf(key);
    let found: FeedReader | undefined;
    for (const reader of this.readers)
      if (timingSafeEqual(digestOf(reader.key), candidate) && found === undefined) found = reader;
    return found;
  }
}

/** Whether `reader` may read the feed of `tenant`. */
export function readsTenant(reader: FeedReader, tenant: string): boolean {
  return reader.allTenants || reader.tenants.has(tenant);
}

function digestOf(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Requests in flight per token (streams, waiting long-polls or pages), against a limit per token. */
export class TokenSlots {
  private readonly open = new Map<string, number>();

  constructor(readonly perToken: number) {}

  /** Takes a slot for `key`; false when it holds its limit already. */
  acquire(key: string): boolean {
    const count = this.open.get(key) ?? 0;
    if (count >= this.perToken) return false;
    this.open.set(key, count + 1);
    return true;
  }

  release(key: string): void {
    const count = (this.open.get(key) ?? 1) - 1;
    if (count <= 0) this.open.delete(key);
    else this.open.set(key, count);
  }
}

/**
 * The per-token limits of one process, shared by every tenant's feed: a token that reads every
 * tenant holds its streams, long-polls and pages across all of them, not that many per tenant.
 */
export class FeedSlots {
  readonly streams: TokenSlots;
  readonly waits: TokenSlots;
  readonly pages: TokenSlots;

  constructor(config: { maxStreamsPerToken: number; maxPagesPerToken: number }) {
    this.streams = new TokenSlots(config.maxStreamsPerToken);
    this.waits = new TokenSlots(config.maxStreamsPerToken);
    this.pages = new TokenSlots(config.maxPagesPerToken);
  }
}
