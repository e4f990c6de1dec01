import { describeError } from '../errors.js';
import { processIo } from './cliIo.js';
import { limitHeapGrowth } from './heapGrowth.js';
import { main } from './main.js';

limitHeapGrowth();

/**
 * Exits once what was written is out: a pipe takes 64 KiB at a time, and process.exit drops the
 * rest (the status of 6,000 logs is a megabyte; its JSON would end mid-object).
 */
const exit = (code: number): void => {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
};

// The executable: without io.signal, long-running commands never resolve and exit from their
// signal handlers.
main(process.argv.slice(2), processIo()).then(exit, (error: unknown) => {
  process.stderr.write(`changefeed: ${describeError(error)}\n`);
  exit(1);
});
