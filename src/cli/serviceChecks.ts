import { readActivityPage } from '../api/activityReader.js';
import { readAllIds } from '../api/listReader.js';
import { pingService } from '../daemon/serviceConnection.js';
import type { AppConfig } from '../config/appConfigSchema.js';
import { describeError, errorCodeOf, type ErrorCode } from '../errors.js';
import { discoveryLists } from '../poll/watchRegistry.js';
import { checkFailed, type CheckResult } from './checkResult.js';
import type { ServiceSession } from './serviceSession.js';

/** The ping: the key is accepted and the service answers. Everything else depends on it. */
export async function checkPing(session: ServiceSession): Promise<CheckResult> {
  try {
    await pingService(session.client);
    return { name: 'ping', ok: true, detail: 'the service accepted the key' };
  } catch (error) {
    return checkFailed('ping', `FAILED: ${describeError(error)}`, 'check api.baseUrl and the key the message names');
  }
}

/** One read of each configured career and skill log: an id the service does not know is caught here, not by `run`. */
export async function checkConfiguredIds(config: AppConfig, session: ServiceSession): Promise<CheckResult[]> {
  const targets = [
    ...config.watch.careers.ids.map((id) => ({ log: 'career' as const, id })),
    ...config.watch.skills.ids.map((id) => ({ log: 'skill' as const, id })),
  ];
  const results: CheckResult[] = [];
  for (const { log, id } of targets) {
    const name = `${log} ${id}`;
    try {
      await readActivityPage(session.client, { log, objectId: id, offset: 0, limit: 1 });
      results.push({ name, ok: true, detail: 'its activity log answers' });
    } catch (error) {
      const fix = fixFor(error, {
        API_NOT_FOUND: `the service does not know this id (or the key's person may not see it): correct or remove it in watch.${log}s.ids`,
        API_INSUFFICIENT_SCOPE: `grant the key the ${log}s:read scope`,
        API_INSUFFICIENT_PERMISSIONS: 'bind the key to a person who may read this log, or stop watching it',
      });
      results.push(checkFailed(name, describeError(error), fix));
    }
  }
  return results;
}

/** One page of each list that discovery reads: proves the scope and `watch.discovery.envelope`. */
export async function checkDiscoveryLists(config: AppConfig, session: ServiceSession): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const list of discoveryLists(config.watch)) {
    const name = `discovery of ${list.log}s`;
    try {
      const page = await readAllIds(session.client, list.path, config.watch.discovery.envelope, undefined, 1);
      results.push({
        name,
        ok: true,
        detail: `GET ${list.path} lists ${page.ids.length}${page.truncated ? '+' : ''} ${list.log}s`,
      });
    } catch (error) {
      const fix = fixFor(error, {
        API_MALFORMED_RESPONSE: 'set watch.discovery.envelope (itemsPath, idField) to the shape of the list response',
        API_INSUFFICIENT_SCOPE: `grant the key the ${list.log}s:read scope, or turn watch.${list.log}s.discover off`,
      });
      results.push(checkFailed(name, describeError(error), fix));
    }
  }
  return results;
}

/** What to do about a failed read, by its error's code. */
function fixFor(error: unknown, fixes: Partial<Record<ErrorCode, string>>): string {
  const code = errorCodeOf(error);
  return (code && fixes[code]) ?? 'see the error; run check again once it is fixed';
}
