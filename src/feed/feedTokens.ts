import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The bearer tokens that may read the feed. A presented token is hashed and compared with every
 * configured token's hash in constant time, all of them each time, so neither the comparison nor
 * the number of comparisons tells how much of a token was right.
 */
export class FeedTokens {
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.digests = tokens.map(digest);
  }

  /** Index of the token the `Authorization` header carries, or -1 for none or a wrong one. */
  match(authorization: string | undefined): number {
    const presented = /^Bearer +([^ ]+) *$/i.exec(authorization ?? '')?.[1];
    if (presented === undefined) return -1;
    const candidate = digest(presented);
    let found = -1;
    this.digests.forEach((known, index) => {
      if (timingSafeEqual(known, candidate) && found === -1) found = index;
    });
    return found;
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Open streams per token, against `feed.maxStreamsPerToken`. */
export class StreamSlots {
  private readonly open = new Map<number, number>();

  constructor(private readonly perToken: number) {}

  /** Takes a slot for `token`; false when it holds its limit already. */
  acquire(token: number): boolean {
    const count = this.open.get(token) ?? 0;
    if (count >= this.perToken) return false;
    this.open.set(token, count + 1);
    return true;
  }

  release(token: number): void {
    const count = (this.open.get(token) ?? 1) - 1;
    if (count <= 0) this.open.delete(token);
    else this.open.set(token, count);
  }
}
