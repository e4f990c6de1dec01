import { ChangefeedError } from '../errors.js';

/** Which port a command binds, and the flag or setting a user changes to pick another. */
export interface PortBinding {
  port: number;
  host: string;
  setting: string;
}

/**
 * Runs `start` (which binds `binding.port`) and turns the bind failures a user can fix into a
 * PORT_IN_USE usage error (exit 2) naming the port and what to change; the raw EADDRINUSE stack
 * says neither. EACCES (a privileged port) gets the same treatment.
 */
export async function bindPort<T>(binding: PortBinding, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const problem =
      code === 'EADDRINUSE'
        ? 'is already in use by another process; stop it or choose another port'
        : code === 'EACCES'
          ? 'needs privileges this process does not have; choose a port above 1023'
          : undefined;
    if (problem === undefined) throw error;
    const message = `port ${binding.port} on ${binding.host} ${problem} with ${binding.setting}`;
    throw new ChangefeedError('PORT_IN_USE', message, { cause: error });
  }
}
