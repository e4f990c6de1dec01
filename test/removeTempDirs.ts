import { afterEach } from 'vitest';
import { removeTempDirs } from './support/tempDir.js';

// A setup file, run before every test file: the unit tests share their modules between files
// (isolate: false in vitest.config.ts), so a hook that test/support/tempDir.ts registered when
// first imported would clean up after the first file of each worker only.
afterEach(removeTempDirs);
