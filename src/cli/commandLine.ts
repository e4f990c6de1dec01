import { Option, type Command } from 'commander';
import type { CliIo } from './cliIo.js';

/**
 * What each command's definition gets from `main`: the io to hand its body, and `run`, which
 * turns the body into commander's action and its result (or error) into the exit code.
 */
export interface CommandHost {
  io: CliIo;
  run<A extends unknown[]>(body: (...args: A) => Promise<number> | number): (...args: A) => Promise<void>;
}

/** Adds a command to `program`: each command's file exports one. */
export type DefineCommand = (program: Command, host: CommandHost) => void;

/** What `configOption` and `tenantOption` give a command. */
export interface TenantFlags {
  config?: string;
  tenant?: string;
}

export const configOption = (): Option =>
  new Option('-c, --config <file>', 'the config file (default: $CHANGEFEED_CONFIG, else config/changefeed.yaml)');

export const tenantOption = (): Option =>
  new Option('--tenant <name>', 'with tenants.dir, the tenant whose store, key and sinks are used');

export const jsonOption = (): Option => new Option('--json', 'print JSON instead of text').default(false);
