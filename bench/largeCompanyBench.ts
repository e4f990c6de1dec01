/**
 * A large company on one key (docs/scaling.md): `npx tsx bench/largeCompanyBench.ts` alone, or
 * after the scheduling tables in `npm run bench`. Needs the compiled CLI (`npm run build`) for
 * plan and status. Four to five minutes on two cores: the two policies' days run side by side.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { printTable } from './benchTable.js';
import { checkLargeCompanyTargets, decisionCostRows, largeCompanyRows } from './cases/largeCompany.js';
import { largeCommandRows, largeDiscoveryRow } from './cases/largeCompanyCommands.js';

export async function runLargeCompanyBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'changefeed-large-'));
  try {
    const stateDir = join(dir, 'state');
    mkdirSync(stateDir);
    const rows = await largeCompanyRows(stateDir);
    printTable(
      'A large company on one key: 5,000 careers, 1,000 skills and the identity-provider log, 900 reads/h, ' +
        '1,200 changes/h in edit sessions (bursty, zipf s=1); one simulated day (seed 7), changes of hours 8-16',
      rows,
    );
    printTable(
      'CPU of one scheduling decision (candidates and nextAction, reallocation amortised)',
      decisionCostRows(),
    );
    const discoveryDir = join(dir, 'discovery');
    printTable("Discovery, plan and status of the large company (plan and status: compiled CLI on the day's store)", [
      await largeDiscoveryRow(discoveryDir),
      ...(await largeCommandRows(stateDir, dir)),
    ]);
    console.log(
      `\nTargets:\n${checkLargeCompanyTargets(rows)
        .map((l) => `  ${l}`)
        .join('\n')}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runLargeCompanyBench();
