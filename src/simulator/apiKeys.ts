import { BASE62, Random } from './random.js';

export interface Credential {
  readonly key: string;
  readonly scopes: ReadonlySet<string>;
  /** Index of the company the key belongs to (0 is the first). */
  readonly company: number;
}

/**
 * A key of the spec's shape (prefix plus 32 random characters), the same for a given seed and
 * company; company 0's is the key of a single-company simulator.
 */
export function deriveApiKey(seed: number, company = 0): string {
  const random = company === 0 ? Random.derive(seed, 'api-key') : Random.derive(seed, 'api-key', company);
  return `sim_live_${random.string(32, BASE62)}`;
}

/**
 * The keys the simulator accepts. Status is looked up on every request, so a revocation or a
 * scope change applies to the very next call (spec 5 rules 6 and 8).
 */
export class ApiKeyRegistry {
  private readonly keys = new Map<string, { scopes: ReadonlySet<string>; company: number }>();

  /** Adds a key of `company`, or replaces the scopes of an existing key (which stays with its company). */
  add(key: string, scopes: readonly string[], company = 0): void {
    if (key.length === 0) throw new Error('an API key must not be empty');
    const owner = this.keys.get(key)?.company ?? company;
    if (owner !== company) throw new Error(`that key already belongs to company ${owner}`);
    this.keys.set(key, { scopes: new Set(scopes), company });
  }

  revoke(key: string): void {
    this.keys.delete(key);
  }

  /** The credential named by an Authorization header, or null for any kind of failure. */
  authenticate(authorization: string | undefined): Credential | null {
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
    const key = match?.[1];
    if (key === undefined) return null;
    const found = this.keys.get(key);
    return found ? { key, ...found } : null;
  }
}

/** The presented key's last four characters: what the service itself shows of a key. */
export function keySuffix(authorization: string | undefined): string | null {
  const token = /^Bearer +(\S+)/i.exec(authorization ?? '')?.[1];
  return token ? token.slice(-4) : null;
}
