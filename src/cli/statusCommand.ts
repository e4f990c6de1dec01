import { withExistingStore } from './existingStore.js';
import { parseArgs } from 'node:util';
import { scrubSecrets } from '../secrets/secretRegistry.js';
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
  const live = await fetchLiveReadiness(config.http);
  return withExistingStore(config, { readonly: true }, async (store) => {
    const report = withLiveSinkState(
      await buildStatusReport(store, Date.now()),
      live,
      config.sinks.map((s) => s.name),
    );
    // Errors recorded by sinks and polls may quote a URL with credentials or an echoed secret.
    process.stdout.write(
      `${scrubSecrets(values.json ? JSON.stringify(report, null, 2) : formatStatusReport(report))}\n`,
    );
    return 0;
  });
}
