import { Refusal } from './consoleRequests.js';

/**
 * The console's long actions (a replay count, a replay, a dead-letter retry) running in this
 * process, at most one per tenant. Each is many short store batches: a second press while one
 * runs is refused rather than stacked beside it, so repeated presses cannot multiply the work.
 */
export class TenantActions {
  private readonly running = new Map<string, string>();

  async run<T>(tenant: string, action: string, work: () => Promise<T>): Promise<T> {
    const busy = this.running.get(tenant);
    if (busy !== undefined)
      throw new Refusal(409, `${busy} is already running for tenant ${tenant}; wait until it finishes, then try again`);
    this.running.set(tenant, action);
    try {
      return await work();
    } finally {
      this.running.delete(tenant);
    }
  }
}
