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
      .describe(
        '`adaptive` polls each log at a frequency that grows with its learned change rate; ' +
          '`round-robin` polls every log equally often.',
      ),
    alpha: z
      .union([z.literal('auto'), z.number().min(0).max(1)])
      .default('auto')
      .describe(
        'Poll frequency is proportional to rate^alpha. 0.5 minimises the mean detection delay for ' +
          'steady rates; lower values poll quiet logs more and shorten the tail. `auto` takes the ' +
          'largest alpha up to 0.5 whose expected p95 delay, for the rates learned so far, is no ' +
          "worse than round-robin's.",
      ),
    maxIntervalMinutes: z
      .number()
      .min(1)
      .max(10_080)
      .default(60)
      .describe('Every watched log is polled at least this often when the budget allows, however quiet it is.'),
    priorEvents: z
      .number()
      .positive()
      .default(1)
      .describe(
        'Prior of the rate estimate until the prior can be fitted to the watched logs: a new log ' +
          'is assumed to have seen this many changes ...',
      ),
    priorHours: z
      .number()
      .positive()
      .max(8_760)
      .default(2)
      .describe('... over this many hours (prior rate = priorEvents / priorHours).'),
    rateHalfLifeHours: z
      .number()
      .positive()
      .max(8_760)
      .default(168)
      .describe(
        'Half-life of the counts behind the long-run rate estimate: older activity weighs less. A ' +
          'week spans the weekday and weekend cycle of editing work, so the estimate does not swing ' +
          'with it.',
      ),
    historyHours: z
      .number()
      .min(0)
      .max(2_160)
      .default(168)
      .describe(
        'The first poll of a log also reads the changes of this many hours before its coverage ' +
          'starts, for the rate estimate only (nothing of it is emitted): one request for a quiet ' +
          'log, where it reads the first window too, one more for a busy one. 0 turns it off.',
      ),
    sessionGapSeconds: z
      .number()
      .min(0)
      .max(86_400)
      .default(120)
      .describe(
        'Changes to one log less than this apart count as one edit session: the estimator counts ' +
          'sessions, so a burst of changes is not mistaken for a busy log.',
      ),
    followUpPolls: z
      .number()
      .int()
      .min(0)
      .default(10)
      .describe(
        'A poll that finds a change performed within sessionGapSeconds, on a log whose sessions ' +
          'bring several changes, is followed by another poll after pollIntervalSeconds, up to this ' +
          'many in a row (0 turns follow-ups off).',
      ),
    learnPrior: z
      .boolean()
      .default(true)
      .describe(
        'Fit the prior of each log kind to the watched logs once they have shown some activity ' +
          '(empirical Bayes); false keeps priorEvents/priorHours.',
      ),
    firstPollWithinSeconds: z
      .number()
      .min(0)
      .max(86_400)
      .default(60)
      .describe(
        "Upper bound on the wait for a newly watched log's first poll: it is polled as soon as the " +
          'read budget has a slot, and first polls go ahead of regular polls, earliest deadline first, ' +
          'when the budget is needed to poll every new log by this deadline. The deadline is set once, ' +
          'when the log is first watched, and kept in the store: a restart never pushes it back.',
      ),
  })
  .strict();

export type ScheduleConfig = z.infer<typeof scheduleConfigSchema>;
