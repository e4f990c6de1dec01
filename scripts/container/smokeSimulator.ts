/**
 * The simulator the container smoke test (build-and-smoke.sh) runs on the host, with a way to ask
 * it for the truth: what a complete feed must hold.
 *
 *   node --import tsx scripts/container/smokeSimulator.ts serve DIR
 *     Starts the simulator on 127.0.0.1 and writes DIR/url and DIR/api-key. On SIGUSR2 it writes
 *     DIR/truth.json: the CloudEvent ids of every entry visible now. SIGTERM stops it (exit 0).
 *   node --import tsx scripts/container/smokeSimulator.ts compare EVENTS_JSONL TRUTH_JSON
 *     Prints how many of the truth's events are missing from the file and how many ids occur
 *     more than once; exits 1 if either is not 0.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventIdFor } from '../../src/events/eventId.js';
import { startSimulator } from '../../src/simulator/index.js';

async function serve(dir: string): Promise<void> {
  // Ten events a second across 5 logs, with 12 minutes of history: a backlog for the first
  // container, and new entries while no container runs.
  const simulator = await startSimulator({
    seed: 15,
    careers: 3,
    skills: 2,
    eventsPerHour: 36_000,
    historyHours: 0.2,
    readsPerHour: 10_000_000,
  });
  const writeAtomically = (name: string, text: string): void => {
    writeFileSync(join(dir, `${name}.tmp`), text, { mode: 0o644 });
    renameSync(join(dir, `${name}.tmp`), join(dir, name));
  };
  writeAtomically('api-key', `${simulator.apiKey}\n`);
  writeAtomically('url', `${simulator.url}\n`);
  process.on('SIGUSR2', () => {
    const ids = simulator
      .visibleEntries()
      .map(({ log, objectId, entry }) => eventIdFor(log, objectId ?? '', entry.id as string));
    writeAtomically('truth.json', JSON.stringify(ids));
  });
  process.on('SIGTERM', () => void simulator.close().then(() => process.exit(0)));
}

function compare(eventsFile: string, truthFile: string): number {
  const truth = JSON.parse(readFileSync(truthFile, 'utf8')) as string[];
  const ids = readFileSync(eventsFile, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => (JSON.parse(line) as { id: string }).id);
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  for (const id of ids) (seen.has(id) ? duplicates : seen).add(id);
  const missing = truth.filter((id) => !seen.has(id));
  process.stdout.write(
    `${ids.length} events in the file, ${truth.length} in the truth: ${missing.length} missing, ` +
      `${duplicates.size} duplicates\n`,
  );
  return missing.length === 0 && duplicates.size === 0 ? 0 : 1;
}

const [command, ...args] = process.argv.slice(2);
if (command === 'serve' && args.length === 1) await serve(args[0]!);
else if (command === 'compare' && args.length === 2) process.exitCode = compare(args[0]!, args[1]!);
else {
  process.stderr.write('usage: smokeSimulator.ts serve DIR | compare EVENTS_JSONL TRUTH_JSON\n');
  process.exitCode = 2;
}
