import { afterAll, afterEach, beforeEach } from 'vitest';
import { closeFileResources, closeTestResources } from './support/closeAfterTest.js';
import { removeFileTempDirs, removeTestTempDirs, testStarted } from './support/tempDir.js';

// A setup file, run before every test file: the files that share their modules between files
// (isolate: false in vitest.config.ts) would otherwise keep hooks that test/support modules
// registered when first imported for the first file of each worker only. Registered first, these
// run first before each test and last after it and after the file (vitest runs after-hooks as a
// stack), so a file's own afterAll stops what writes to its directories before they go; the
// support modules' servers close before the temp dirs they write to are removed.
beforeEach(testStarted);
afterEach(removeTestTempDirs);
afterEach(closeTestResources);
afterAll(removeFileTempDirs);
afterAll(closeFileResources);
