import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/longestFirstSequencer.js';

/** The files that share their modules within a worker (isolate: false); every other file is isolated. */
const SHARED = [
  'test/unit/**/*.test.ts',
  'test/config/**/*.test.ts',
  'test/simulator/**/*.test.ts',
  'test/deploy/**/*.test.ts',
  'test/integration/**/*.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: more workers only make integration tests fight over the CPU.
    maxWorkers: 2,
    reporters: ['default'],
    setupFiles: [...(process.env.SUITE_CPU_LOG ? ['test/fileCpu.ts'] : []), 'test/testCleanup.ts'],
    // The longest files first, so that the two workers finish together (test/fileDurations.json).
    sequence: { shuffle: false, sequencer: LongestFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: SHARED,
          // Pure unit tests load src/ once per worker rather than once per file: that import was
          // most of their CPU (101 s isolated, 38 s shared). They leave no state behind: no
          // module mocks, fake timers and process listeners restored in the file that set them.
          // The config, simulator and deploy tests are of the same kind: loopback servers and
          // temp dirs closed by the file that made them, no environment left changed. So are the
          // integration tests, whose daemons, in-process or spawned, each file stops (97 s of CPU
          // isolated, 49 s shared).
          isolate: false,
          globalSetup: ['test/cliBundle.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ['test/**/*.test.ts'],
          exclude: SHARED,
          // Bundles the CLI once per project, for the tests that spawn it (test/support/daemonProcess.ts's CLI).
          globalSetup: ['test/cliBundle.ts'],
        },
      },
    ],
  },
});
