import { startSimulator, type Simulator, type SimulatorOptionsInput } from '../../src/simulator/index.js';
import { closeAfterTest } from './closeAfterTest.js';

/** A simulator on loopback, closed after the test. */
export async function startTestSimulator(options: SimulatorOptionsInput): Promise<Simulator> {
  const simulator = await startSimulator(options);
  closeAfterTest(() => simulator.close());
  return simulator;
}
