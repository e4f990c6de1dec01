import { describe, expect, it } from 'vitest';
import { simulateDay } from '../../bench/cases/schedulingDay.js';

describe("the scheduling bench's model day", () => {
  it('runs the poll loop: it polls, detects changes and stays within the budget', async () => {
    const day = await simulateDay({
      workload: { kind: 'zipf', s: 1 },
      seed: 7,
      careers: 20,
      skills: 5,
      eventsPerHour: 60,
      bucketPerHour: 200,
      otherClientPerHour: 0,
      hours: 2,
      warmupHours: 0,
      serviceHistoryHours: 0,
      schedule: {},
    });
    // About 180 reads an hour for two hours (the reserve keeps 10%).
    expect(day.requests).toBeGreaterThan(300);
    expect(day.maxRollingHour).toBeLessThanOrEqual(180);
    expect(day.events).toBeGreaterThan(30);
    expect(day.rateLimited).toBe(0);
  });
});
