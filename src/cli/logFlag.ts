import { InvalidArgumentError, Option } from 'commander';
import { LOG_KINDS, parseLogName, type LogKind } from '../logs.js';
import type { CliIo } from './cliIo.js';

/**
 * `--log`: a log's name (`career`, `skill`, `identity_provider`), or a deprecated spelling, which
 * is taken with a note on stderr saying what to write instead. Anything else is a usage error
 * (exit 2) naming the accepted values.
 */
export function logOption(description: string, io: CliIo): Option {
  return new Option('--log <kind>', `${description}: ${LOG_KINDS.join(', ')}`).argParser((raw): LogKind => {
    const named = parseLogName(raw);
    if (!named) throw new InvalidArgumentError(`expected one of ${LOG_KINDS.join(', ')}, got "${raw}"`);
    if (named.deprecated) io.stderr.write(`changefeed: --log: ${named.deprecated}\n`);
    return named.kind;
  });
}
