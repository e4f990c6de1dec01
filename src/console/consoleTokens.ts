import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { readSecretFile } from '../secrets/readSecretFile.js';
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
 * a secret (scrubbed from logs). A token given twice keeps its stronger role. A presented token is
 * hashed and compared with every configured one in constant time, all of them each time, as the
 * feed's tokens are (feedTokens.ts).
 */
export class ConsoleTokens {
  private readonly digests: Buffer[] = [];
  private readonly users: ConsoleUser[] = [];

  constructor(config: Pick<ConsoleConfig, 'tokens' | 'tokenFiles'>) {
    const byKey = new Map<string, { digest: Buffer; role: ConsoleRole }>();
    const add = (token: string, role: ConsoleRole) => {
      registerSecret(token);
      const digest = digestOf(token);
      const key = digest.toString('hex').slice(0, 16);
      const known = byKey.get(key);
      byKey.set(key, { digest, role: known?.role === 'operator' ? 'operator' : role });
    };
    for (const { token, role } of config.tokens) add(token, role);
    for (const { file, role } of config.tokenFiles) {
      const token = readSecretFile(file);
      registerSecret(token);
      if (!/^[\x21-\x7e]{16,}$/.test(token))
        throw new ConfigError(`the console token in ${file} is not usable`, [
          { path: 'console.tokenFiles', message: 'write at least 16 printable ASCII characters without spaces' },
        ]);
      add(token, role);
    }
    for (const [key, { digest, role }] of byKey) {
      this.digests.push(digest);
      this.users.push({ key, role });
    }
  }

  get size(): number {
    return this.users.length;
  }

  /** The user of a token typed into the sign-in form, or undefined for a wrong one. */
  signIn(presented: string): ConsoleUser | undefined {
    const candidate = digestOf(presented);
    let found: ConsoleUser | undefined;
    this.digests.forEach((known, index) => {
      if (timingSafeEqual(known, candidate) && found === undefined) found = this.users[index];
    });
    return found;
  }

  /** The user whose token key a session names, while that token is still configured. */
  byKey(key: string): ConsoleUser | undefined {
    const candidate = digestOf(key);
    let found: ConsoleUser | undefined;
    for (const user of this.users)
      if (timingSafeEqual(digestOf(user.key), candidate) && found === undefined) found = user;
    return found;
  }
}

function digestOf(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
