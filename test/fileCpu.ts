import { appendFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

// A setup file loaded only when SUITE_CPU_LOG names a file (vitest.config.ts): appends one JSON line
// per test file with the CPU seconds of the worker and of every child process it has reaped
// (/proc/self/stat's utime, stime, cutime, cstime) and the wall seconds, from the end of the
// previous file in this worker (or the worker's start) to the end of this one, so the import of
// src/ and the children a file spawned count for the file; load-independent, unlike its duration.

interface Mark {
  cpu: number;
  wall: number;
}

const TICKS_PER_SECOND = 100;

function now(): Mark {
  // The fields after the command name, which may hold spaces, start at its closing parenthesis.
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  // utime, stime, cutime, cstime are fields 14-17 of proc(5); fields[0] here is field 3.
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
  return { cpu: ticks / TICKS_PER_SECOND, wall: performance.now() / 1000 };
}

const state = globalThis as { fileCpuLastMark?: Mark };
const start: Mark = state.fileCpuLastMark ?? { cpu: 0, wall: 0 };
let file = '?';

// eslint-disable-next-line no-empty-pattern -- Vitest wants the context destructured to pass the suite second.
beforeAll(({}, suite) => {
  file = relative(process.cwd(), 'filepath' in suite ? suite.filepath : suite.file.filepath);
});

afterAll(() => {
  const end = now();
  state.fileCpuLastMark = end;
  const line = {
    file,
    cpu: +(end.cpu - start.cpu).toFixed(2),
    wall: +(end.wall - start.wall).toFixed(2),
    pid: process.pid,
  };
  appendFileSync(process.env.SUITE_CPU_LOG!, `${JSON.stringify(line)}\n`);
});
