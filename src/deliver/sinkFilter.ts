import picomatch from 'picomatch';
import { LOGS, type LogKind } from '../logs.js';
import type { SinkFilter } from '../sinkContract/deliveryConfig.js';

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
