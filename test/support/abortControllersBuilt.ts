/**
 * How many AbortControllers `run` built: the global constructor is counted while it runs, for
 * tests that a path meant to build none (each was an EventTarget with two Maps) still builds none.
 */
export async function abortControllersBuilt(run: () => unknown): Promise<number> {
  const Original = globalThis.AbortController;
  let built = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      built++;
    }
  };
  try {
    await run();
  } finally {
    globalThis.AbortController = Original;
  }
  return built;
}
