/**
 * Imports a module that only some configurations use (a broker's client, the PostgreSQL engine,
 * the console) when it is first needed, so a process that needs none of them never pays for
 * loading it: `changefeed --version` or a SQLite daemon with a webhook sink starts without parsing
 * mqtt, ioredis, NATS or pg. A module that cannot be loaded (a package missing from node_modules,
 * a broken install) throws `failure(reason)`, the typed error of the layer that asked for it.
 */
export async function loadOnDemand<T>(
  load: () => Promise<T>,
  failure: (reason: string, cause: unknown) => Error,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw failure(error instanceof Error ? error.message : String(error), error);
  }
}
