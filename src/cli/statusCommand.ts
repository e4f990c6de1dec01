import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ChangefeedError } from '../errors.js';
import { ChangefeedStore } from '../store/changefeedStore.js';
import { openDatabase, storePath } from '../store/database.js';
import { loadInspectionConfig } from './loadAppConfig.js';
import { buildStatusReport, formatStatusReport } from './statusReport.js';

export const STATUS_USAGE = `changefeed status [--config FILE] [--json]
  Shows cursors, lag, outbox depth and per-sink progress from the store. Safe while the daemon runs.`;

export function statusCommand(argv: string[]): number {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: 'string', short: 'c' }, json: { type: 'boolean', default: false } },
    strict: true,
  });
  const { config } = loadInspectionConfig({ configFlag: values.config });
  const file = storePath(config.stateDir);
  if (!existsSync(file)) throw new ChangefeedError('STORE_MISSING', `no store at ${file}; has the daemon run with stateDir ${config.stateDir}?`);
  const store = new ChangefeedStore(openDatabase(file, { readonly: true }));
  try {
    const report = buildStatusReport(store, Date.now());
    process.stdout.write(`${values.json ? JSON.stringify(report, null, 2) : formatStatusReport(report)}\n`);
    return 0;
  } finally {
    store.close();
  }
}
