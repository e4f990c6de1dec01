import { z } from 'zod';

/**
 * How the poll loop spends the read budget over the watched logs (docs/scheduling.md).
 * Lives under `watch.schedule`; the shortest interval between two polls of one log is still
 * `watch.pollIntervalSeconds`.
 */
export const scheduleConfigSchema = z
  .object({
    policy: z
      .enum(['adaptive', 'round-robin'])
      .default('adaptive')
      .describe('`adaptive` polls each log at a frequency that grows with its learned change rate; `round-robin` polls every log equally often.'),
    alpha: z
      .number()
      .min(0)
      .max(1)
      .default(0.4)
      .describe('Poll frequency is proportional to rate^alpha. 0.5 minimises the mean detection delay for steady rates; a little below trades mean for a better p95.'),
    maxIntervalMinutes: z
      .number()
      .min(1)
      .default(60)
      .describe('Every watched log is polled at least this often when the budget allows, however quiet it is.'),
    priorEvents: z
      .number()
      .positive()
      .default(1)
      .describe('Prior of the rate estimate: a new log is assumed to have seen this many changes ...'),
    priorHours: z
      .number()
      .positive()
      .default(2)
      .describe('... over this many hours (prior rate = priorEvents / priorHours).'),
    rateHalfLifeHours: z
      .number()
      .positive()
      .default(24)
      .describe('Half-life of the counts behind the long-run rate estimate: older activity weighs less.'),
    burstHalfLifeMinutes: z
      .number()
      .positive()
      .default(5)
      .describe('Half-life of the burst term: how long a log that just changed is polled more often.'),
    burstFollowUps: z
      .number()
      .min(0)
      .default(1)
      .describe('Changes expected to follow each change just seen (0 turns burst reaction off).'),
    firstPollWithinSeconds: z
      .number()
      .min(0)
      .default(60)
      .describe('A newly watched log is first polled within about this long.'),
  })
  .strict();

export type ScheduleConfig = z.infer<typeof scheduleConfigSchema>;
