import { existsSync } from 'node:fs';
import { appConfigSchema, ENV_MAPPING, type AppConfig } from '../config/appConfigSchema.js';
import { loadConfig } from '../config/loadConfig.js';

/** The default config path, used when neither --config nor CHANGEFEED_CONFIG names one and it exists. */
export const DEFAULT_CONFIG_PATH = 'config/changefeed.yaml';

/** Resolves the config file (--config, CHANGEFEED_CONFIG, or the default path if present) and loads every layer. */
export function loadAppConfig(args: {
  configFlag?: string | undefined;
  env?: NodeJS.ProcessEnv;
  overrides?: Record<string, unknown>;
  embeddedDefaults?: unknown;
}): { config: AppConfig; file: string | undefined } {
  const env = args.env ?? process.env;
  const file = args.configFlag ?? env.CHANGEFEED_CONFIG ?? (existsSync(DEFAULT_CONFIG_PATH) ? DEFAULT_CONFIG_PATH : undefined);
  const config = loadConfig(appConfigSchema, {
    file,
    env,
    envMapping: { ...ENV_MAPPING },
    overrides: args.overrides,
    embeddedDefaults: args.embeddedDefaults,
  });
  return { config, file };
}
