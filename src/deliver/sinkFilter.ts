import picomatch from 'picomatch';
import { parseLogName, type LogKind } from '../logs.js';
import type { SinkFilter } from '../sinkContract/deliveryConfig.js';

/**
 * Decides whether a sink receives an event, from the log and the event type's last two parts
 * (`career.level_added`), so patterns do not depend on the configured type prefix.
 */
export function compileSinkFilter(
  filter: SinkFilter | undefined,
  onDeprecated: (note: string) => void = () => undefined,
): (event: { log: LogKind; type: string }) => boolean {
  if (!filter || (!filter.logs && !filter.include && !filter.exclude)) return () => true;
  const named = filter.logs?.map(parseLogName);
  for (const note of new Set(named?.map((n) => n?.deprecated))) if (note) onDeprecated(`filter.logs: ${note}`);
  const logs = named ? new Set(named.map((n) => n?.kind)) : undefined;
  const include = filter.include ? picomatch(filter.include, { dot: true }) : undefined;
  const exclude = filter.exclude ? picomatch(filter.exclude, { dot: true }) : undefined;
  return (event) => {
    if (logs && !logs.has(event.log)) return false;
    const name = `${event.log}.${event.type.split('.').at(-1) ?? ''}`;
    if (include && !include(name)) return false;
    return !(exclude && exclude(name));
  };
}
