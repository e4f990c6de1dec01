import type { AppConfig } from '../config/appConfigSchema.js';
import { describeError } from '../errors.js';
import { readSecretFile } from '../secrets/readSecretFile.js';
import { checkFailed, type CheckResult } from './checkResult.js';

/**
 * Whether the store's password file (`store.passwordFile`) can be read, so that a wrong path or
 * an unmounted Secret shows in `check` rather than as `run` exiting at start. The database
 * itself is not contacted.
 */
export function checkStorePassword(config: Pick<AppConfig, 'store'>): CheckResult | undefined {
  const file = config.store.passwordFile;
  if (file === undefined) return undefined;
  const name = 'store password';
  try {
    readSecretFile(file);
    return { name, ok: true, detail: `read from ${file} (store.passwordFile)` };
  } catch (error) {
    return checkFailed(name, describeError(error), 'check store.passwordFile and the secret mount');
  }
}
