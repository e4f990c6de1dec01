/**
 * `npm run bench [-- <section>...]`: throughput, memory, freshness and failover figures, printed
 * as tables whose rows carry their goal and a met/short verdict. No section: all of them, in
 * order; `--list`: the sections with their expected times. Figures are for this machine (2
 * cores); compare runs on the same machine only. `npm run bench` builds dist/ first: the scale,
 * hostile and large-company cases run the compiled CLI.
 */
import { loadavg } from 'node:os';
import { parseBenchArgs } from './benchArgs.js';
import { BENCH_SECTIONS } from './benchSections.js';

const request = parseBenchArgs(
  process.argv.slice(2),
  BENCH_SECTIONS.map((s) => s.name),
);
if ('error' in request) {
  console.error(`bench: ${request.error}`);
  process.exitCode = 2;
} else if ('list' in request) {
  const width = Math.max(...BENCH_SECTIONS.map((s) => s.name.length));
  console.log('Sections of npm run bench (expected minutes on a quiet 2-core machine):\n');
  for (const s of BENCH_SECTIONS)
    console.log(`  ${s.name.padEnd(width)}  ${`~${s.minutes} min`.padEnd(11)} ${s.measures}`);
  console.log('\nnpm run bench -- <section> [<section>...] runs those alone; no section runs them all.');
} else {
  for (const name of request.sections) {
    const section = BENCH_SECTIONS.find((s) => s.name === name);
    if (!section) continue;
    const load = (): string =>
      loadavg()
        .map((l) => l.toFixed(2))
        .join(' ');
    console.log(`\n== ${section.name}: ${section.measures} (expected ~${section.minutes} min; load ${load()})`);
    const started = performance.now();
    await section.run();
    const minutes = (performance.now() - started) / 60_000;
    console.log(`== ${section.name}: ${minutes.toFixed(1)} min (load ${load()})`);
  }
}
