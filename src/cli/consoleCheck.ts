import type { AppConfig } from '../config/appConfigSchema.js';
import { OperatorConsole } from '../console/operatorConsole.js';
import { ConfigError, describeError } from '../errors.js';
import { checkFailed, type CheckResult } from './checkResult.js';

/** Whether the operator console can start as configured: the health listener and a readable token. */
export function checkConsole(config: Pick<AppConfig, 'console' | 'http'>): CheckResult | undefined {
  if (!config.console.enabled) return undefined;
  try {
    OperatorConsole.check(config);
    return { name: 'console', ok: true, detail: `/console on ${config.http.host}:${config.http.port}` };
  } catch (error) {
    const fix =
      error instanceof ConfigError ? error.issues.map((i) => `${i.path}: ${i.message}`).join('; ') : undefined;
    return checkFailed('console', describeError(error), fix || undefined);
  }
}
