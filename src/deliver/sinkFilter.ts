import picomatch from 'picomatch';
import { z } from 'zod';
import { LOG_KINDS, LOGS, type LogKind } from '../logs.js';

export const sinkFilterSchema = z
  .object({
    logs: z
      .array(z.enum(LOG_KINDS as [LogKind, ...LogKind[]]))
      .optional()
      .describe('Only events of these logs (career, skill, identityProvider); all logs when absent.'),
    include: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'Glob patterns over `<log>.<event>` (e.g. `career.*`, `identity_provider.user_*`); only ' +
          'matching events are sent.',
      ),
    exclude: z
      .array(z.string().min(1))
      .optional()
      .describe('Glob patterns over `<log>.<event>`; matching events are not sent (wins over include).'),
  })
  .strict();

export type SinkFilter = z.infer<typeof sinkFilterSchema>;

/**
 * Decides whether a sink receives an event, from the log and the event type's last two parts
 * (`career.level_added`), so patterns do not depend on the configured type prefix.
 */
export function compileSinkFilter(filter: SinkFilter | undefined): (event: { log: LogKind; type: string }) => boolean {
  if (!filter || (!filter.logs && !filter.include && !filter.exclude)) return () => true;
  const logs = filter.logs ? new Set(filter.logs) : undefined;
  const include = filter.include ? picomatch(filter.include, { dot: true }) : undefined;
  const exclude = filter.exclude ? picomatch(filter.exclude, { dot: true }) : undefined;
  return (event) => {
    if (logs && !logs.has(event.log)) return false;
    const name = `${LOGS[event.log].slug}.${event.type.split('.').at(-1) ?? ''}`;
    if (include && !include(name)) return false;
    return !(exclude && exclude(name));
  };
}
