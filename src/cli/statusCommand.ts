import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ChangefeedError } from '../errors.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { ChangefeedStore } from '../store/changefeedStore.js';
import { openDatabase, storePath } from '../store/database.js';
import { fetchLiveReadiness, withLiveSinkState } from './liveSinkState.js';
import { loadInspectionConfig } from './loadAppConfig.js';
import { buildStatusReport, formatStatusReport } from './statusReport.js';

export const STATUS_USAGE = `changefeed status [--config FILE] [--json]
  Shows cursors, lag, outbox depth and per-sink progress from the store. Safe while the daemon runs.
  Sink state (active, connected) is asked live from the running daemon on http.port when it answers;
  otherwise the last recorded value is shown and marked "(recorded)".`;

export async function statusCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: 'string', short: 'c' }, json: { type: 'boolean', default: false } },
    strict: true,
  });
  const { config } = loadInspectionConfig({ configFlag: values.config });
  const file = storePath(config.stateDir);
  if (!existsSync(file))
    throw new ChangefeedError(
      'STORE_MISSING',
      `no store at ${file}; has the daemon run with stateDir ${config.stateDir}?`,
    );
  const live = await fetchLiveReadiness(config.http);
  const store = new ChangefeedStore(openDatabase(file, { readonly: true }));
  try {
    const report = withLiveSinkState(
      buildStatusReport(store, Date.now()),
      live,
      config.sinks.map((s) => s.name),
    );
    // Errors recorded by sinks and polls may quote a URL with credentials or an echoed secret.
    process.stdout.write(
      `${scrubSecrets(values.json ? JSON.stringify(report, null, 2) : formatStatusReport(report))}\n`,
    );
    return 0;
  } finally {
    store.close();
  }
}
