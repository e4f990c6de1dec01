import { setFlagsFromString } from 'node:v8';

/** How far V8 lets the heap grow past what the last full collection kept, in percent. */
const HEAP_GROWING_PERCENT = 85;

/**
 * Lets the heap grow to 1.85 times what survived the last full collection instead of V8's own
 * factor of up to four. A daemon of 1,000 tenants on PostgreSQL keeps 130 to 190 MB alive; with
 * V8's factor its heap reached 570 MB and its RSS 780 MB, with 100% 310 MB and 440 MB at the same
 * CPU. At 5,000 tenants 85% kept the peak under 1 GB on both engines (SQLite 898 -> 822 MiB,
 * PostgreSQL 962 -> 930) at no CPU a run could show; 75% cost a fifth more CPU, when each tenant
 * kept 6 KB more (docs/scaling.md). A small heap limit (--max-old-space-size) would bound memory
 * too, but ends the process when the live set outgrows it; `--optimize-for-size` halved RSS again
 * but doubled CPU. A `--heap-growing-percent` given to node itself is left as it is.
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((arg) => arg.startsWith('--heap-growing-percent') || arg.startsWith('--heap_growing_percent')))
    return false;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
