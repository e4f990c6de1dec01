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
    if (code === 'EADDRINUSE') {
      throw new ChangefeedError(
        'PORT_IN_USE',
        `port ${binding.port} on ${binding.host} is already in use by another process; stop it or choose another port with ${binding.setting}`,
        { cause: error },
      );
    }
    if (code === 'EACCES') {
      throw new ChangefeedError(
        'PORT_IN_USE',
        `port ${binding.port} on ${binding.host} needs privileges this process does not have; choose a port above 1023 with ${binding.setting}`,
        { cause: error },
      );
    }
    throw error;
  }
}
