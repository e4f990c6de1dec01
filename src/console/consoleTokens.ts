import { matchDigest, readTokenFile, tokenDigest } from '../feed/feedTokens.js';
import { registerSecret } from '../secrets/secretRegistry.js';
import type { ConsoleConfig, ConsoleRole } from './consoleConfig.js';

/** Who signed in: a stable key of the token (never the token itself) and its role. */
export interface ConsoleUser {
  /** The first 16 hex digits of the token's sha256: what the session cookie names. */
  readonly key: string;
  readonly role: ConsoleRole;
}

/**
 * The console's sign-in tokens, from `console.tokens` and `console.tokenFiles`, each registered as
 * a secret (scrubbed from logs). A token given twice keeps its stronger role. Tokens are matched
 * in constant time (matchDigest).
 */
export class ConsoleTokens {
  private readonly digests: Buffer[] = [];
  private readonly users: ConsoleUser[] = [];
  private readonly keyDigests: Buffer[];

  constructor(config: Pick<ConsoleConfig, 'tokens' | 'tokenFiles'>) {
    const byKey = new Map<string, { digest: Buffer; role: ConsoleRole }>();
    const add = (token: string, role: ConsoleRole) => {
      registerSecret(token);
      const digest = tokenDigest(token);
      const key = digest.toString('hex').slice(0, 16);
      const known = byKey.get(key);
      byKey.set(key, { digest, role: known?.role === 'operator' ? 'operator' : role });
    };
    for (const { token, role } of config.tokens) add(token, role);
    for (const { file, role } of config.tokenFiles)
      add(readTokenFile(file, 'console.tokenFiles', `the console token in ${file} is not usable`), role);
    for (const [key, { digest, role }] of byKey) {
      this.digests.push(digest);
      this.users.push({ key, role });
    }
    this.keyDigests = this.users.map((user) => tokenDigest(user.key));
  }

  get size(): number {
    return this.users.length;
  }

  /** The user of a token typed into the sign-in form, or undefined for a wrong one. */
  signIn(presented: string): ConsoleUser | undefined {
    return this.users[matchDigest(this.digests, presented)];
  }

  /** The user whose token key a session names, while that token is still configured. */
  byKey(key: string): ConsoleUser | undefined {
    return this.users[matchDigest(this.keyDigests, key)];
  }
}
