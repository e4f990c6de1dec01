import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { readSecretFile } from '../secrets/readSecretFile.js';
import { registerSecret } from '../secrets/secretRegistry.js';

/**
 * The tokens written in `tokens` and those read from `tokenFiles`, each registered as a secret
 * (scrubbed from logs). ConfigError names the file whose token cannot travel in a header.
 */
export function readFeedTokens(tokens: readonly string[], tokenFiles: readonly string[], path: string): string[] {
  const read = tokenFiles.map((file) => readTokenFile(file, path, `the token in ${file} cannot be sent in a header`));
  for (const token of tokens) registerSecret(token);
  return [...tokens, ...read];
}

/** The token a file holds, registered as a secret; ConfigError (`message`, at `path`) unless it is one. */
export function readTokenFile(file: string, path: string, message: string): string {
  const token = readSecretFile(file);
  registerSecret(token);
  if (!/^[\x21-\x7e]{16,}$/.test(token))
    throw new ConfigError(message, [{ path, message: 'write at least 16 printable ASCII characters without spaces' }]);
  return token;
}

/**
 * The index of the digest `presented` hashes to, or -1. Compared with every digest each time, in
 * constant time, so neither the comparison nor the number of comparisons tells how much was right.
 */
export function matchDigest(digests: readonly Buffer[], presented: string): number {
  const candidate = tokenDigest(presented);
  let found = -1;
  digests.forEach((known, index) => {
    if (timingSafeEqual(known, candidate) && found === -1) found = index;
  });
  return found;
}

export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
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
 * matched (matchDigest) whatever tenant the request names, so the tenant tells nothing either.
 */
export class FeedTokens {
  private readonly digests: Buffer[] = [];
  private readonly readers: FeedReader[] = [];
  private readonly keyDigests: Buffer[];

  constructor(grants: readonly FeedTokenGrant[]) {
    const byDigest = new Map<string, { digest: Buffer; allTenants: boolean; tenants: Set<string> }>();
    for (const grant of grants) {
      const digest = tokenDigest(grant.token);
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
    this.keyDigests = this.readers.map((reader) => tokenDigest(reader.key));
  }

  /** The reader of the token the `Authorization` header carries, or undefined for none or a wrong one. */
  match(authorization: string | undefined): FeedReader | undefined {
    const presented = /^Bearer +([^ ]+) *$/i.exec(authorization ?? '')?.[1];
    const found = matchDigest(this.digests, presented ?? '');
    return presented === undefined ? undefined : this.readers[found];
  }

  /**
   * The reader whose key a redirect ticket names, while its token is still configured: a token
   * removed from the files (and so from these tokens at the reload) takes its tickets with it.
   */
  reader(key: string): FeedReader | undefined {
    return this.readers[matchDigest(this.keyDigests, key)];
  }
}

/** Whether `reader` may read the feed of `tenant`. */
export function readsTenant(reader: FeedReader, tenant: string): boolean {
  return reader.allTenants || reader.tenants.has(tenant);
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
