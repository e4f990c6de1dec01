import { BASE62, Random } from './random.js';

export interface Credential {
  readonly key: string;
  readonly scopes: ReadonlySet<string>;
}

/** A key of the spec's shape (prefix plus 32 random characters), the same for a given seed. */
export function deriveApiKey(seed: number): string {
  return `sim_live_${Random.derive(seed, 'api-key').string(32, BASE62)}`;
}

/**
 * The keys the simulator accepts. Status is looked up on every request, so a revocation or a
 * scope change applies to the very next call (spec 5 rules 6 and 8).
 */
export class ApiKeyRegistry {
  private readonly keys = new Map<string, ReadonlySet<string>>();

  /** Adds a key, or replaces the scopes of an existing one. */
  add(key: string, scopes: readonly string[]): void {
    if (key.length === 0) throw new Error('an API key must not be empty');
    this.keys.set(key, new Set(scopes));
  }

  revoke(key: string): void {
    this.keys.delete(key);
  }

  /** The credential named by an Authorization header, or null for any kind of failure. */
  authenticate(authorization: string | undefined): Credential | null {
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
    const key = match?.[1];
    if (key === undefined) return null;
    const scopes = this.keys.get(key);
    return scopes ? { key, scopes } : null;
  }
}

/** The presented key's last four characters: what the service itself shows of a key. */
export function keySuffix(authorization: string | undefined): string | null {
  const token = /^Bearer +(\S+)/i.exec(authorization ?? '')?.[1];
  return token ? token.slice(-4) : null;
}
