import { describeError } from '../errors.js';
import { main } from './main.js';

// The executable: long-running commands never resolve and exit from their signal handlers.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`changefeed: ${describeError(error)}\n`);
    process.exit(1);
  },
);
