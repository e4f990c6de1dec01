/**
 * One policy's day of the large company, in a process of its own so `npm run bench` runs the two
 * policies side by side on two cores: `npx tsx bench/largeCompanyDay.ts <round-robin|adaptive> [stateDir]`.
 * Prints the day's figures and the CPU it took as one JSON line.
 */
import { LARGE_COMPANY } from './cases/largeCompany.js';
import { simulateDay } from './cases/schedulingDay.js';

const [policy = 'adaptive', stateDir] = process.argv.slice(2);
const cpu = process.cpuUsage();
const started = Date.now();
const { trueRates: _rates, ...day } = await simulateDay({ ...LARGE_COMPANY, schedule: { policy }, stateDir });
const used = process.cpuUsage(cpu);
console.log(
  JSON.stringify({ ...day, cpuSeconds: (used.user + used.system) / 1e6, wallSeconds: (Date.now() - started) / 1000 }),
);
