/**
 * The slot at which never-polled logs' first-poll starts are reckoned, and whether starts
 * reckoned at one slot still serve at the pace of now. The pace moves a little with almost every
 * request, and reckoning the starts at each move is costly while many logs are new. A start
 * (`latestFirstPollStarts`) is a minimum of deadlines less whole chains of slots, so it moves by at
 * most `chainCost` times the change of the slot. Starts are kept while no later than the exact
 * ones (no deadline is risked) and at most half a slot earlier (no decision, one per slot, sees a
 * first poll become due more than half a slot early).
 */

/** How far kept starts may be earlier than the exact ones, in slots of now. */
const EARLY_SLOTS = 0.5;

/**
 * The slot to reckon starts at for a slot of `slotMs` now and `chainCost` requests of first
 * polls (the sum of their costs, each at least 1): a little longer than now's, the middle of
 * the range `firstPollSlotHolds` accepts, so the pace may move either way before they are
 * reckoned again. 0 (no budget) stays 0.
 */
export function firstPollSlotMs(slotMs: number, chainCost: number): number {
  return slotMs * (1 + EARLY_SLOTS / (2 * Math.max(1, chainCost)));
}

/**
 * Whether starts reckoned at `reckonedSlotMs` still hold at a slot of `slotMs` now: no later than
 * the exact starts (the reckoned slot is at least now's) and at most half a slot of now earlier.
 */
export function firstPollSlotHolds(reckonedSlotMs: number, slotMs: number, chainCost: number): boolean {
  return reckonedSlotMs >= slotMs && Math.max(1, chainCost) * (reckonedSlotMs - slotMs) <= EARLY_SLOTS * slotMs;
}
