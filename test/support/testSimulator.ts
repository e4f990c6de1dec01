import type { ManualClock } from './manualClock.js';
import { startSimulator, type Simulator, type SimulatorOptionsInput } from '../../src/simulator/index.js';
import { closeAfterTest } from './closeAfterTest.js';

/** A simulator on loopback, closed after the test. */
export async function startTestSimulator(options: SimulatorOptionsInput): Promise<Simulator> {
  const simulator = await startSimulator(options);
  closeAfterTest(() => simulator.close());
  return simulator;
}

/** A company with one newest-first skill log and nothing else, changing only when a test says, on `clock`. */
export async function newestFirstSkillLog(
  clock: ManualClock,
  seed: number,
): Promise<{ clock: ManualClock; simulator: Simulator; skillId: string }> {
  const simulator = await startTestSimulator({
    clock,
    seed,
    careers: 0,
    skills: 1,
    identityProviderShare: 0,
    sortOrder: 'newest-first',
    eventsPerHour: 0,
    historyHours: 0,
    readsPerHour: 1_000_000,
  });
  return { clock, simulator, skillId: simulator.skillIds[0] as string };
}
