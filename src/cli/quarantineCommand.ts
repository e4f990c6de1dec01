import { withExistingStore } from './existingStore.js';
import { parseArgs } from 'node:util';
import { ChangefeedError } from '../errors.js';
import { LOGS } from '../logs.js';
import { logFlag } from './logFlag.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { loadTenantInspectionConfig } from './loadAppConfig.js';
import { numericFlag } from './numericFlag.js';
import { terminalSafe } from './terminalText.js';

export const QUARANTINE_USAGE = `changefeed quarantine list [--config FILE] [--tenant NAME] [--log career|skill|identity_provider] [--limit N] [--json]
  Shows entries the service sent that could not become events (no id, a performedAt that does not
  parse, larger than api.maxEntryBytes): their log, the reason and the raw JSON. They were not
  emitted; the rest of their page was, and the log went on. Safe while the daemon runs.`;

export async function quarantineCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'list') throw new ChangefeedError('USAGE', `expected "list"\n\n${QUARANTINE_USAGE}`);
  const { values } = parseArgs({
    args: rest,
    options: {
      config: { type: 'string', short: 'c' },
      tenant: { type: 'string' },
      log: { type: 'string' },
      limit: { type: 'string', default: '100' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const log = logFlag(values.log);
  const limit = numericFlag('limit', values.limit, { min: 1, max: 100_000, integer: true });
  const { config, tenant } = loadTenantInspectionConfig({ configFlag: values.config, tenant: values.tenant });
  return withExistingStore(config, { readonly: true, tenant }, async (store) => {
    const stored = await store.quarantine.list({ ...(log ? { log } : {}), ...(limit ? { limit } : {}) });
    const records = stored.map((r) => ({ ...r, log: LOGS[r.log].slug }));
    if (values.json) {
      process.stdout.write(`${scrubSecrets(JSON.stringify(records, null, 2))}\n`);
    } else if (records.length === 0) {
      process.stdout.write('no quarantined entries\n');
    } else {
      for (const r of records) {
        const raw = r.raw.length > 300 ? `${r.raw.slice(0, 300)}... (${r.rawBytes} bytes)` : r.raw;
        process.stdout.write(
          `${new Date(r.firstSeenAt).toISOString()}  ${r.log} ${terminalSafe(r.objectId || '-')} ` +
            ` entry ${terminalSafe(r.entryId ?? '(no id)')}  request ${terminalSafe(r.requestId ?? '-')}\n` +
            `    reason: ${terminalSafe(r.reason)}\n    raw: ${terminalSafe(scrubSecrets(raw))}\n`,
        );
      }
    }
    return 0;
  });
}
