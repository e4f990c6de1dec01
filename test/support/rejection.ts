/** The error a promise rejects with and how long that took; a promise that resolves yields an 'expected a rejection' error. */
export async function rejection(promise: Promise<unknown>): Promise<{ error: Error; ms: number }> {
  const started = Date.now();
  const error = await promise.then(
    () => new Error('expected a rejection'),
    (e: unknown) => e as Error,
  );
  return { error, ms: Date.now() - started };
}
