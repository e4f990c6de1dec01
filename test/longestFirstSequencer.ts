import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Wall seconds each slow test file took in a recorded full run of `npm test`, from its
 * SUITE_CPU_LOG (test/fileCpu.ts; files of 5 s and more): their order is what counts, not the
 * figures, which grow with the machine's load.
 */
const recorded = JSON.parse(readFileSync(join(import.meta.dirname, 'fileDurations.json'), 'utf8')) as Record<
  string,
  number
>;

/**
 * Starts the longest files first, so the two workers end together instead of one running a long
 * file alone at the end. A clean clone has no Vitest results cache (which orders by the last
 * run's durations), hence the recorded figures; files not recorded follow in Vitest's own order.
 *
 * The files of an isolated project (vitest.config.ts's ISOLATED) come last. Vitest's pool keeps a
 * shared worker, with the modules it has imported, only while the next file in line is a shared
 * one too: a file needing a process of its own in the middle of the run ends the worker that
 * finished before it, and the shared files after it start a new worker that imports src/ again.
 * At the end, it ends a worker that has nothing left to run.
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const byDefault = await super.sort(files);
    const seconds = (spec: TestSpecification): number =>
      recorded[relative(spec.project.config.root, spec.moduleId).replaceAll('\\', '/')] ?? 0;
    const isolated = (spec: TestSpecification): number => (spec.project.config.isolate ? 1 : 0);
    // Array.prototype.sort is stable: unrecorded files keep the default order among themselves.
    return byDefault.sort((a, b) => isolated(a) - isolated(b) || seconds(b) - seconds(a));
  }
}
