import { afterEach } from 'vitest';
import { startSimulator, type Simulator, type SimulatorOptionsInput } from '../../src/simulator/index.js';

const running: Simulator[] = [];

afterEach(async () => {
  for (const simulator of running.splice(0)) await simulator.close();
});

/** A simulator on loopback, closed after the test. */
export async function startTestSimulator(options: SimulatorOptionsInput): Promise<Simulator> {
  const simulator = await startSimulator(options);
  running.push(simulator);
  return simulator;
}
