import { ChangefeedError } from '../errors.js';
import { LOG_SLUGS, parseLogName, type LogKind } from '../logs.js';

/**
 * Reads `--log`: a log's slug (`career`, `skill`, `identity_provider`), or a deprecated spelling,
 * which is taken with a note on `warn` (stderr) saying what to write instead. Anything else is a
 * USAGE error (exit 2) naming the accepted values.
 */
export function logFlag(
  raw: string | undefined,
  warn: (note: string) => void = (note) => process.stderr.write(`changefeed: ${note}\n`),
): LogKind | undefined {
  if (raw === undefined) return undefined;
  const named = parseLogName(raw);
  if (!named) throw new ChangefeedError('USAGE', `--log must be one of ${LOG_SLUGS.join(', ')}, got "${raw}"`);
  if (named.deprecated) warn(`--log: ${named.deprecated}`);
  return named.kind;
}
