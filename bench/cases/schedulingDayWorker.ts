/**
 * A child process of the scheduling bench's day pool: runs one simulated day per message, on
 * the model or on the real daemon, and answers with its result. The days are independent and
 * deterministic (a ManualClock each), so where a day runs does not change its figures.
 */
import { simulateDaemonDay } from './schedulingDaemon.js';
import { simulateDay } from './schedulingDay.js';
import type { DayJob, DayReply } from './schedulingDayPool.js';

process.on('message', (job: DayJob) => {
  const cpu = process.cpuUsage();
  const day = job.kind === 'daemon' ? simulateDaemonDay(job.options) : simulateDay(job.options);
  day.then(
    (result) => {
      const used = process.cpuUsage(cpu);
      reply({ id: job.id, result, cpuSeconds: (used.user + used.system) / 1e6 });
    },
    (error: unknown) =>
      reply({ id: job.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});

function reply(message: DayReply): void {
  process.send?.(message);
}
