import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/longestFirstSequencer.js';

/** Files with module mocks, which would leak into the files after them in a shared worker. */
const MOCKING = ['test/store/olderSchemaCommands.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: more workers only make integration tests fight over the CPU.
    maxWorkers: 2,
    // Every file shares its modules with the files before it in its worker, so src/ is imported
    // once per worker rather than once per file: that import was most of the CPU of the files that
    // ran isolated (the sink tests: 79 s of CPU isolated, 50 s shared). A file leaves no state
    // behind: no module mocks, fake timers and process listeners restored in the file that set them,
    // loopback servers, brokers' connections, daemons (in-process or spawned) and temp dirs closed
    // by the file that made them, no environment left changed; a support module closes what it
    // opened through test/support/closeAfterTest.ts, not a hook of its own (test/testCleanup.ts).
    isolate: false,
    reporters: ['default'],
    // SUITE_CPU_LOG=<file>: one line of CPU and wall seconds per test file (test/fileCpu.ts).
    setupFiles: [...(process.env.SUITE_CPU_LOG ? ['test/fileCpu.ts'] : []), 'test/testCleanup.ts'],
    // Bundles the CLI once per run, for the tests that spawn it (test/support/daemonProcess.ts's CLI).
    globalSetup: ['test/cliBundle.ts'],
    // The longest files first, so that the two workers finish together (test/fileDurations.json).
    sequence: { shuffle: false, sequencer: LongestFirstSequencer },
    projects: [
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: MOCKING } },
      // The mocking files spawn no CLI: no second bundle.
      { extends: true, test: { name: 'isolated', include: MOCKING, isolate: true, globalSetup: [] } },
    ],
  },
});
