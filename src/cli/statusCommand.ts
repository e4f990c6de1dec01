import { withExistingStore } from './existingStore.js';
import { parseArgs } from 'node:util';
import { DEFAULT_TENANT } from '../tenants/tenant.js';
import { scrubSecrets } from '../secrets/secretRegistry.js';
import { fetchLiveReadiness, withLiveSinkState } from './liveSinkState.js';
import { loadTenantInspectionConfig } from './loadAppConfig.js';
import { buildStatusReport, formatStatusReport } from './statusReport.js';

export const STATUS_USAGE = `changefeed status [--config FILE] [--tenant NAME] [--json]
  Shows cursors, lag, outbox depth and per-sink progress from the store. Safe while the daemon runs.
  Sink state (active, connected) is asked live from the running daemon on http.port when it answers;
  otherwise the last recorded value is shown and marked "(recorded)".`;

export async function statusCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      tenant: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const { config, tenant } = loadTenantInspectionConfig({ configFlag: values.config, tenant: values.tenant });
  const live = await fetchLiveReadiness(config.http);
  return withExistingStore(config, { readonly: true, tenant }, async (store) => {
    const report = withLiveSinkState(
      await buildStatusReport(store, Date.now()),
      live,
      config.sinks.map((s) => s.name),
      tenant === DEFAULT_TENANT ? '' : `${tenant}/`,
    );
    // Errors recorded by sinks and polls may quote a URL with credentials or an echoed secret.
    process.stdout.write(
      `${scrubSecrets(values.json ? JSON.stringify(report, null, 2) : formatStatusReport(report))}\n`,
    );
    return 0;
  });
}
