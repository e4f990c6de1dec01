import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/longestFirstSequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Bundles the CLI once, for the tests that spawn it (test/support/daemonProcess.ts's CLI).
    globalSetup: ['test/cliBundle.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: more workers only make integration tests fight over the CPU.
    maxWorkers: 2,
    reporters: ['default'],
    // The longest files first, so that the two workers finish together (test/fileDurations.json).
    sequence: { shuffle: false, sequencer: LongestFirstSequencer },
  },
});
