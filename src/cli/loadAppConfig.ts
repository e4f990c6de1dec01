import { existsSync } from 'node:fs';
import { appConfigSchema, ENV_MAPPING, inspectionConfigSchema, type AppConfig } from '../config/appConfigSchema.js';
import { loadConfig } from '../config/loadConfig.js';

/** The default config path, used when neither --config nor CHANGEFEED_CONFIG names one and it exists. */
export const DEFAULT_CONFIG_PATH = 'config/changefeed.yaml';

interface ConfigArgs {
  configFlag?: string | undefined;
  env?: NodeJS.ProcessEnv;
  overrides?: Record<string, unknown>;
  embeddedDefaults?: unknown;
}

/** Resolves the config file (--config, CHANGEFEED_CONFIG, or the default path if present) and loads every layer. */
export function loadAppConfig(args: ConfigArgs): { config: AppConfig; file: string | undefined } {
  const file = configFile(args);
  return { config: loadConfig(appConfigSchema, sources(args, file)), file };
}

/** As loadAppConfig, for commands that only read the store: the `api` section is not validated. */
export function loadInspectionConfig(args: ConfigArgs): { config: Omit<AppConfig, 'api'>; file: string | undefined } {
  const file = configFile(args);
  return { config: loadConfig(inspectionConfigSchema, sources(args, file)), file };
}

function configFile(args: ConfigArgs): string | undefined {
  const env = args.env ?? process.env;
  return args.configFlag ?? env.CHANGEFEED_CONFIG ?? (existsSync(DEFAULT_CONFIG_PATH) ? DEFAULT_CONFIG_PATH : undefined);
}

function sources(args: ConfigArgs, file: string | undefined) {
  return {
    file,
    env: args.env ?? process.env,
    envMapping: { ...ENV_MAPPING },
    overrides: args.overrides,
    embeddedDefaults: args.embeddedDefaults,
  };
}
