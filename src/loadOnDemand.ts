import { createRequire } from 'node:module';

/**
 * Imports a module that only some configurations use (a broker's client, the PostgreSQL engine,
 * the console) when it is first needed, so a process that needs none of them never parses it. A
 * module that cannot be loaded throws `failure(reason)`, the typed error of the layer that asked.
 */
export async function loadOnDemand<T>(
  load: () => Promise<T>,
  failure: (reason: string, cause: unknown) => Error,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw failedToLoad(error, failure);
  }
}

/**
 * loadOnDemand for a CommonJS package needed synchronously (pino-pretty, as a logger is built),
 * required by its name from this project's node_modules.
 */
export function requireOnDemand<T>(name: string, failure: (reason: string, cause: unknown) => Error): T {
  try {
    return createRequire(import.meta.url)(name) as T;
  } catch (error) {
    throw failedToLoad(error, failure);
  }
}

/** The reason is the error's first line: require's message goes on with the stack of requiring files. */
function failedToLoad(error: unknown, failure: (reason: string, cause: unknown) => Error): Error {
  const message = error instanceof Error ? error.message : String(error);
  return failure(message.split('\n', 1)[0]!, error);
}
