/**
 * The largest batch an event may travel in after failing `attempts` times. Below `strikes` the
 * sink's batch size; from then on halved with every further attempt, down to 1. So a batch that
 * keeps failing the same way while others succeed is narrowed down to the one event the
 * destination cannot take, instead of being retried whole for ever.
 */
export function poisonBatchCap(attempts: number, strikes: number, batchSize: number): number {
  if (strikes <= 0 || attempts < strikes) return batchSize;
  return Math.max(1, Math.floor(batchSize / 2 ** (attempts - strikes + 1)));
}

/**
 * True when a failed event is poison: it failed alone (a batch of one), at least `strikes` times,
 * and the destination took other events after this one first failed. A destination that is down
 * takes nothing, so its events are never judged poison; they wait for the retry schedule.
 */
export function isPoison(args: {
  batchLength: number;
  attempts: number;
  strikes: number;
  firstAttemptAt: number | null;
  lastSuccessAt: number | null;
}): boolean {
  if (args.strikes <= 0 || args.batchLength !== 1 || args.attempts < args.strikes) return false;
  return args.firstAttemptAt !== null && args.lastSuccessAt !== null && args.lastSuccessAt > args.firstAttemptAt;
}
