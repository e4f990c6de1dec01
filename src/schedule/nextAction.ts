/**
 * What the poll loop does next, decided by one pure function of the time and an explicit
 * snapshot of everything that matters: a key-wide pause, discovery, free poll slots, the read
 * budget, and each watched log's schedule, failures and in-flight state. The loop only gathers
 * the snapshot and carries out the answer, so every choice can be tested from a table of cases.
 */

/**
 * Why a log goes before another, strongest first. Within a class the higher urgency wins.
 * - `unpaced`: the budget has room for every log at the minimum interval; the one that waited
 *   longest goes first (urgency: ms waited).
 * - `starving`: about to exceed `maxIntervalMinutes`. The floor is a promise, so it beats
 *   follow-ups elsewhere that may have raised the others' urgency (urgency: waited / starvingMs).
 * - `firstPoll`: a log never polled whose first poll must start now for every new log to be
 *   polled by its deadline at the budget's pace; earliest deadline first (urgency: ms since that
 *   latest start). Before that moment a new log is `regular`, so it takes a slot the others leave.
 * - `followUp`: an edit session is likely still going on in this log (urgency: waited / interval).
 * - `regular`: its share of the budget, like stride scheduling (urgency: waited / interval; due
 *   at 1).
 */
export const PRIORITY_CLASSES = ['unpaced', 'starving', 'firstPoll', 'followUp', 'regular'] as const;
export type PriorityClass = (typeof PRIORITY_CLASSES)[number];

/** One active watched log as the scheduler plans it. */
export interface LogCandidate {
  /** `logKey(log, objectId)`. */
  key: string;
  /** Earliest moment it may be polled: the minimum interval after its last poll; -Infinity before its first. */
  earliestAt: number;
  /** What urgency counts from: the last poll, or one interval before its first-poll deadline. */
  anchorAt: number;
  /** Target time between two polls; 0 when the budget does not limit polls at all. */
  intervalMs: number;
  /** Time since `anchorAt` after which the log is `starving`. */
  starvingMs: number;
  /** When a follow-up poll is due; null when none is pending. */
  followUpDueAt: number | null;
  /**
   * A log never polled: the latest start of its first poll (`latestFirstPollStarts`), from which
   * it goes before follow-ups and regular polls. Null once it has been polled.
   */
  firstPollAt: number | null;
}

/** What the loop knows of the key's read budget. Absent when nothing limits requests (tests). */
export interface BudgetView {
  /** When the next request may leave (pace, the server's window, a 429 pause). */
  sendAt: number;
  /** Requests waiting for a slot with discovery's priority or higher. */
  waitingDiscoveryOrHigher: number;
  /** Requests waiting for a slot of any priority (backfill pages included). */
  waiting: number;
}

/** A pause of every poll on the key (rejected key, expired trial, full disk). */
export interface KeyPause {
  until: number;
  /** For a rejected key: it ends as soon as the key file is replaced. */
  forCredential: boolean;
  /** The key file was replaced since the key was rejected. */
  keyReplaced: boolean;
}

export interface LoopSnapshot {
  pause: KeyPause | undefined;
  /** Discovery: when it is due next (undefined when off), and whether a run is in flight. */
  discovery: { dueAt: number | undefined; running: boolean };
  /** Polls that may start now under `watch.concurrency`. */
  freeSlots: number;
  budget: BudgetView | undefined;
  logs: readonly LogCandidate[];
  inFlight: ReadonlySet<string>;
  /** Per key, the end of a failure backoff; a log is not polled before it. */
  backoffUntil: ReadonlyMap<string, number>;
  /**
   * Set for `run --once`: one poll of every active log, after discovery. `remaining` holds the
   * keys still to poll (undefined until discovery has run); a log leaves it once polled or given
   * up by the failure policy, and a retried one waits its backoff in `backoffUntil`.
   */
  once?: { remaining: ReadonlySet<string> | undefined } | undefined;
}

export type NextAction =
  | { launch: 'discovery' }
  | { launch: 'poll'; key: string }
  | { wakeAt: number }
  /** The rejected key was replaced: the key-wide pause ends now. */
  | { resume: 'keyReplaced' }
  /** `run --once`: every log was polled or given up, and nothing is in flight. */
  | { stop: 'swept' };

/** Wake at least this often, whatever the snapshot says: a safety net, never the plan. */
export const IDLE_WAKE_MS = 60_000;
/** A wake-up no sooner than this after now, so a moment that just passed cannot spin the loop. */
export const MIN_WAKE_MS = 50;
/** While the key is paused for a rejection, the key file is looked at this often: it may be replaced any moment. */
export const KEY_FILE_CHECK_MS = 1_000;

/** When to look again while a key-wide pause holds every poll; undefined when none does. */
export function pauseWakeAt(now: number, pause: KeyPause | undefined): number | undefined {
  if (pause === undefined || pause.until <= now) return undefined;
  return pause.forCredential ? Math.min(pause.until, now + KEY_FILE_CHECK_MS) : pause.until;
}

/**
 * The loop's next step. Discovery goes first when due. A poll is launched only when the budget
 * would let a request leave now: requests already waiting with discovery's priority take the next
 * slot, while backfill pages take only what polls leave, so with backfill waiting a *due* poll
 * is launched ahead of the slot (its request queues ahead of them). Otherwise the answer is when
 * to look again.
 */
export function nextAction(now: number, s: LoopSnapshot): NextAction {
  if (s.once) return onceAction(now, s, s.once);
  const paused = pauseWakeAt(now, s.pause);
  if (paused !== undefined)
    return s.pause?.forCredential && s.pause.keyReplaced ? { resume: 'keyReplaced' } : { wakeAt: paused };
  const discoveryDue = s.discovery.dueAt !== undefined && !s.discovery.running;
  if (discoveryDue && (s.discovery.dueAt as number) <= now) return { launch: 'discovery' };
  // While discovery runs, its end wakes the loop; its past due time must not.
  const discoveryWake = discoveryDue ? Math.max(s.discovery.dueAt as number, now + MIN_WAKE_MS) : Infinity;
  const wake = (at: number): NextAction => ({ wakeAt: Math.min(at, discoveryWake, now + IDLE_WAKE_MS) });

  // A finishing poll wakes the loop when the slots are full.
  if (s.freeSlots <= 0) return wake(Infinity);
  const sendAt = s.budget?.sendAt ?? now;
  if (s.budget && s.budget.waitingDiscoveryOrHigher > 0) return wake(Math.max(now + MIN_WAKE_MS, sendAt + 1));
  const backfillWaiting = (s.budget?.waiting ?? 0) > 0;
  if (sendAt > now && !backfillWaiting) return wake(sendAt);

  let backoffEnds = Infinity;
  const eligible = (key: string): boolean => {
    if (s.inFlight.has(key)) return false;
    const until = s.backoffUntil.get(key) ?? 0;
    if (until > now) backoffEnds = Math.min(backoffEnds, until);
    return until <= now;
  };
  const choice = chooseLog(now, s.logs, eligible, backfillWaiting);
  if ('key' in choice) return { launch: 'poll', key: choice.key };
  return wake(Math.max(now + MIN_WAKE_MS, Math.min(choice.wakeAt, backoffEnds)));
}

/**
 * `run --once`: discovery first (again after its backoff while it fails transiently), then every
 * remaining log as soon as a slot is free, whatever its schedule: a sweep polls each log once, and
 * each poll waits for its request's slot in the read budget. A key-wide pause does not hold the
 * sweep: the failure that caused it is reported and the other logs are still tried, rather than
 * keeping a cron job waiting up to an hour. The sweep stops when no log remains and nothing is
 * in flight.
 */
function onceAction(now: number, s: LoopSnapshot, once: NonNullable<LoopSnapshot['once']>): NextAction {
  const wake = (at: number): NextAction => ({ wakeAt: Math.max(now + MIN_WAKE_MS, Math.min(at, now + IDLE_WAKE_MS)) });
  const { dueAt, running } = s.discovery;
  if (dueAt !== undefined && !running && dueAt <= now) return { launch: 'discovery' };
  // The logs to poll are those discovery leaves active. While it runs, its end wakes the loop
  // (its past due time must not); after a failure, its retry does.
  if (running || once.remaining === undefined) return wake(Infinity);
  if (dueAt !== undefined) return wake(dueAt);
  if (once.remaining.size === 0 && s.inFlight.size === 0) return { stop: 'swept' };
  if (s.freeSlots <= 0) return wake(Infinity);
  let backoffEnds = Infinity;
  for (const key of once.remaining) {
    if (s.inFlight.has(key)) continue;
    const until = s.backoffUntil.get(key) ?? 0;
    if (until <= now) return { launch: 'poll', key };
    backoffEnds = Math.min(backoffEnds, until);
  }
  return wake(backoffEnds);
}

/**
 * Where a log stands at `now` (urgency is compared within the class: higher goes first), or null
 * while it must not be polled yet (minimum interval).
 */
export function urgencyOf(c: LogCandidate, now: number): { priority: PriorityClass; urgency: number } | null {
  if (c.earliestAt > now) return null;
  const waited = now - c.anchorAt;
  if (c.intervalMs <= 0) return { priority: 'unpaced', urgency: waited };
  if (waited >= c.starvingMs) return { priority: 'starving', urgency: waited / c.starvingMs };
  if (c.firstPollAt !== null && c.firstPollAt <= now) return { priority: 'firstPoll', urgency: now - c.firstPollAt };
  const urgency = waited / c.intervalMs;
  if (c.followUpDueAt !== null && c.followUpDueAt <= now) return { priority: 'followUp', urgency };
  return { priority: 'regular', urgency };
}

type Urgency = NonNullable<ReturnType<typeof urgencyOf>>;

const goesBefore = (a: Urgency, b: Urgency): boolean => {
  const rank = PRIORITY_CLASSES.indexOf(a.priority) - PRIORITY_CLASSES.indexOf(b.priority);
  return rank < 0 || (rank === 0 && a.urgency > b.urgency);
};

/**
 * The most urgent eligible log, or when the next one may be polled. The loop asks only when a
 * request could leave, so a slot is never left unused while some log may be polled, even one not
 * yet due: slots lost to rounding would otherwise stretch every interval a little. With `dueOnly`
 * (backfill is waiting for the slot) only a log that is due counts.
 */
function chooseLog(
  now: number,
  logs: readonly LogCandidate[],
  eligible: (key: string) => boolean,
  dueOnly: boolean,
): { key: string } | { wakeAt: number } {
  let best: { key: string; at: Urgency } | undefined;
  let wakeAt = Infinity;
  for (const c of logs) {
    if (!eligible(c.key)) continue;
    const at = urgencyOf(c, now);
    if (at === null) {
      wakeAt = Math.min(wakeAt, c.earliestAt);
      continue;
    }
    if (dueOnly && at.priority === 'regular' && at.urgency < 1) {
      const due = [c.anchorAt + c.intervalMs, c.followUpDueAt ?? Infinity, c.firstPollAt ?? Infinity];
      wakeAt = Math.min(wakeAt, ...due, c.anchorAt + c.starvingMs);
      continue;
    }
    if (!best || goesBefore(at, best.at)) best = { key: c.key, at };
  }
  return best ? { key: best.key } : { wakeAt };
}
