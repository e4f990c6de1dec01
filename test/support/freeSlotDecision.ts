import { nextAction, type LogCandidate, type NextAction } from '../../src/schedule/nextAction.js';

/**
 * What the poll loop decides at `now` over `logs` with one slot free and nothing else in the way:
 * no pause, no discovery due, no budget state, no poll in flight, no backoff.
 */
export function freeSlotDecision(now: number, logs: readonly LogCandidate[]): NextAction {
  return nextAction(now, {
    pause: undefined,
    discovery: { dueAt: undefined, running: false },
    freeSlots: 1,
    budget: undefined,
    logs,
    inFlight: new Set(),
    backoffUntil: new Map(),
  });
}
