import { afterAll, afterEach, beforeEach } from 'vitest';
import { removeFileTempDirs, removeTestTempDirs, testStarted } from './support/tempDir.js';

// A setup file, run before every test file: the unit tests share their modules between files
// (isolate: false in vitest.config.ts), so hooks that test/support/tempDir.ts registered when
// first imported would clean up after the first file of each worker only. Registered first, these
// run first before each test and last after it and after the file (vitest runs after-hooks as a
// stack), so a file's own afterAll stops what writes to its directories before they go.
beforeEach(testStarted);
afterEach(removeTestTempDirs);
afterAll(removeFileTempDirs);
