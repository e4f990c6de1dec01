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
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const byDefault = await super.sort(files);
    const seconds = (spec: TestSpecification): number =>
      recorded[relative(spec.project.config.root, spec.moduleId).replaceAll('\\', '/')] ?? 0;
    // Array.prototype.sort is stable: unrecorded files keep the default order among themselves.
    return byDefault.sort((a, b) => seconds(b) - seconds(a));
  }
}
