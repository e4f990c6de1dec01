import type { RateState } from './rateState.js';

/** The numbers kept per log, in this order within a log's slot. */
const LAST_POLL_AT = 0;
const COST = 1;
const PLANNED_RATE = 2;
const PLANNED_WEIGHT = 3;
const EVENTS = 4;
const SESSIONS = 5;
const HOURS = 6;
const LAST_EVENT_AT = 7;
const UPDATED_AT = 8;
const FIELDS = 9;

/** Null and "not planned yet" are kept as NaN: a time, a count or a cost never is one. */
const orNull = (value: number): number | null => (Number.isNaN(value) ? null : value);
const orNaN = (value: number | null | undefined): number => value ?? Number.NaN;

/**
 * The numbers a scheduler keeps for each of its logs (last poll, cost of a poll, planned rate and
 * weight, the rate estimate's counts and times), packed in one Float64Array with a slot per log:
 * as object fields each would be a heap number of its own, about 180 bytes a log held for the
 * process's life (docs/scaling.md).
 */
export class LogNumbers {
  private values = new Float64Array(0);
  /** Slots of logs that left, given again before the array grows. */
  private readonly free: number[] = [];
  private used = 0;

  /**
   * Room for `logs` logs in all, so that the logs of one sync fit without the array doubling
   * past what they need (a tenant's 26 logs in 26 slots, not 32).
   */
  reserve(logs: number): void {
    // The free slots are given first, so `logs` logs never need more than max(used, logs) slots.
    if (logs * FIELDS > this.values.length) this.grow(logs * FIELDS);
  }

  /** A slot for a new log: never polled, cost `cost`, the rate state `rate`, nothing planned. */
  add(rate: RateState, lastPollAt: number | null, cost: number): number {
    let slot = this.free.pop();
    if (slot === undefined) {
      slot = this.used++;
      if (this.used * FIELDS > this.values.length) this.grow(Math.max(8 * FIELDS, 2 * this.values.length));
    }
    this.setRate(slot, rate);
    this.setLastPollAt(slot, lastPollAt);
    this.setCost(slot, cost);
    this.clearPlan(slot);
    return slot;
  }

  private grow(length: number): void {
    const grown = new Float64Array(length);
    grown.set(this.values);
    this.values = grown;
  }

  /** Logs the array holds without growing. */
  get capacity(): number {
    return this.values.length / FIELDS;
  }

  /** The log of `slot` left: its slot may be given to the next log added. */
  remove(slot: number): void {
    this.free.push(slot);
  }

  lastPollAt(slot: number): number | null {
    return orNull(this.values[slot * FIELDS + LAST_POLL_AT]!);
  }

  setLastPollAt(slot: number, at: number | null): void {
    this.values[slot * FIELDS + LAST_POLL_AT] = orNaN(at);
  }

  cost(slot: number): number {
    return this.values[slot * FIELDS + COST]!;
  }

  setCost(slot: number, cost: number): void {
    this.values[slot * FIELDS + COST] = cost;
  }

  /** The planned rate, undefined until `setPlannedRate` since the last `clearPlan`. */
  plannedRate(slot: number): number | undefined {
    return orNull(this.values[slot * FIELDS + PLANNED_RATE]!) ?? undefined;
  }

  setPlannedRate(slot: number, rate: number): void {
    this.values[slot * FIELDS + PLANNED_RATE] = rate;
  }

  plannedWeight(slot: number): number | undefined {
    return orNull(this.values[slot * FIELDS + PLANNED_WEIGHT]!) ?? undefined;
  }

  setPlannedWeight(slot: number, weight: number): void {
    this.values[slot * FIELDS + PLANNED_WEIGHT] = weight;
  }

  /** Forgets the planned rate and weight (the estimate, the prior or alpha changed). */
  clearPlan(slot: number): void {
    this.values[slot * FIELDS + PLANNED_RATE] = Number.NaN;
    this.values[slot * FIELDS + PLANNED_WEIGHT] = Number.NaN;
  }

  /** The rate state of `slot`, as a new object (the estimator's functions take one). */
  rate(slot: number): RateState {
    const at = slot * FIELDS;
    const v = this.values;
    return {
      events: v[at + EVENTS]!,
      sessions: v[at + SESSIONS]!,
      hours: v[at + HOURS]!,
      lastEventAt: orNull(v[at + LAST_EVENT_AT]!),
      updatedAt: orNull(v[at + UPDATED_AT]!),
    };
  }

  lastEventAt(slot: number): number | null {
    return orNull(this.values[slot * FIELDS + LAST_EVENT_AT]!);
  }

  updatedAt(slot: number): number | null {
    return orNull(this.values[slot * FIELDS + UPDATED_AT]!);
  }

  setRate(slot: number, rate: RateState): void {
    const at = slot * FIELDS;
    const v = this.values;
    v[at + EVENTS] = rate.events;
    v[at + SESSIONS] = rate.sessions;
    v[at + HOURS] = rate.hours;
    v[at + LAST_EVENT_AT] = orNaN(rate.lastEventAt);
    v[at + UPDATED_AT] = orNaN(rate.updatedAt);
  }
}
