import { parseArgs } from 'node:util';
import { createApiKeyProvider } from '../api/apiKeyProvider.js';
import { createServiceClient, pingService } from '../changefeedDaemon.js';
import { systemClock } from '../clock.js';
import { describeError } from '../errors.js';
import { createLogger } from '../observe/createLogger.js';
import { ReadBudget } from '../poll/readBudget.js';
import { ServerClock } from '../poll/serverClock.js';
import { loadAppConfig } from './loadAppConfig.js';

export const CHECK_USAGE = `changefeed check [--config FILE]
  Validates the configuration and pings the service once with the configured key.`;

export async function checkCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { config: { type: 'string', short: 'c' } }, strict: true });
  const { config, file } = loadAppConfig({ configFlag: values.config });
  const out = (line: string): boolean => process.stdout.write(`${line}\n`);
  out(`config ${file ?? '(defaults and environment only)'} is valid`);
  out(`  service: ${config.api.baseUrl}`);
  out(`  watching: careers ${describeSet(config.watch.careers)}, skills ${describeSet(config.watch.skills)}, identity-provider log ${config.watch.identityProviderEvents ? 'on' : 'off'}`);
  out(`  sinks: ${config.sinks.map((s) => `${s.name} (${s.type})`).join(', ')}`);
  const client = createServiceClient(config, {
    apiKey: createApiKeyProvider(config.api),
    clock: systemClock,
    logger: createLogger({ level: 'silent' }),
    budget: new ReadBudget(config.budget, systemClock),
    serverClock: new ServerClock(systemClock),
  });
  try {
    await pingService(client);
    out('ping: the service accepted the key');
    return 0;
  } catch (error) {
    out(`ping: FAILED: ${describeError(error)}`);
    return 1;
  } finally {
    await client.close();
  }
}

function describeSet(set: { ids: string[]; discover: boolean }): string {
  return set.discover ? `${set.ids.length} listed, discovery on` : `${set.ids.length} listed`;
}
