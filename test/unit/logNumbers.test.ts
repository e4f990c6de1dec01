import { describe, expect, it } from 'vitest';
import { LogNumbers } from '../../src/schedule/logNumbers.js';
import { emptyRateState, type RateState } from '../../src/schedule/rateState.js';

const T0 = Date.UTC(2026, 0, 1, 8);

describe('LogNumbers', () => {
  it.each<[string, RateState, number | null, number]>([
    ['a log never polled, nothing learned', emptyRateState(), null, 1],
    [
      'a log polled, its rate learned',
      { events: 3.25, sessions: 1.5, hours: 12.75, lastEventAt: T0 - 1, updatedAt: T0 },
      T0,
      1.7,
    ],
    ['seen once, no change yet', { events: 0, sessions: 0, hours: 0, lastEventAt: null, updatedAt: T0 }, T0, 2],
    ['a change seen, no update', { events: 1, sessions: 1, hours: 0, lastEventAt: T0, updatedAt: null }, null, 0.5],
  ])('gives back what a slot was given, nulls as nulls: %s', (_, rate, lastPollAt, cost) => {
    const numbers = new LogNumbers();
    const slot = numbers.add(rate, lastPollAt, cost);
    expect(numbers.rate(slot)).toEqual(rate);
    expect(numbers.lastEventAt(slot)).toBe(rate.lastEventAt);
    expect(numbers.updatedAt(slot)).toBe(rate.updatedAt);
    expect(numbers.lastPollAt(slot)).toBe(lastPollAt);
    expect(numbers.cost(slot)).toBe(cost);
    expect(numbers.plannedRate(slot)).toBeUndefined();
    expect(numbers.plannedWeight(slot)).toBeUndefined();
  });

  it('keeps a planned rate and weight until the plan is cleared', () => {
    const numbers = new LogNumbers();
    const slot = numbers.add(emptyRateState(), null, 1);
    numbers.setPlannedRate(slot, 0);
    numbers.setPlannedWeight(slot, 2.5);
    expect([numbers.plannedRate(slot), numbers.plannedWeight(slot)]).toEqual([0, 2.5]);
    numbers.clearPlan(slot);
    expect([numbers.plannedRate(slot), numbers.plannedWeight(slot)]).toEqual([undefined, undefined]);
  });

  it('keeps every log apart while the array grows, and a slot given again starts afresh', () => {
    const numbers = new LogNumbers();
    const slots = Array.from({ length: 100 }, (_, i) =>
      numbers.add({ events: i, sessions: i / 2, hours: i * 3, lastEventAt: T0 + i, updatedAt: T0 + 2 * i }, T0 - i, i),
    );
    expect(new Set(slots).size).toBe(100);
    numbers.setPlannedRate(slots[40]!, 9);
    slots.forEach((slot, i) => {
      expect(numbers.rate(slot)).toEqual({
        events: i,
        sessions: i / 2,
        hours: i * 3,
        lastEventAt: T0 + i,
        updatedAt: T0 + 2 * i,
      });
      expect([numbers.lastPollAt(slot), numbers.cost(slot)]).toEqual([T0 - i, i]);
    });
    numbers.remove(slots[40]!);
    const again = numbers.add(emptyRateState(), null, 1);
    expect(again).toBe(slots[40]);
    expect(numbers.rate(again)).toEqual(emptyRateState());
    expect([numbers.lastPollAt(again), numbers.plannedRate(again)]).toEqual([null, undefined]);
    expect(numbers.rate(slots[41]!).events).toBe(41);
  });
});

describe('LogNumbers.reserve', () => {
  it('makes room for exactly the logs of a sync, and the logs added after still fit', () => {
    const numbers = new LogNumbers();
    numbers.reserve(26);
    const slots = Array.from({ length: 26 }, (_, i) => numbers.add(emptyRateState(), T0 + i, 1));
    expect(numbers.capacity).toBe(26);
    const more = numbers.add(emptyRateState(), T0 + 26, 1);
    expect(numbers.capacity).toBeGreaterThan(26);
    expect([...slots, more].map((s) => numbers.lastPollAt(s))).toEqual(Array.from({ length: 27 }, (_, i) => T0 + i));
  });
});
