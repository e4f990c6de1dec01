import type { LogKind } from '../logs.js';
import type { RateState } from './rateState.js';
import type { ScheduleConfig } from './scheduleConfig.js';

/** Below this much evidence the configured prior stands: a fit on a handful of logs is noise. */
const MIN_LOGS = 10;
const MIN_SESSIONS = 20;
/** Support of the fitted prior: session rates per hour, log-spaced. */
const GRID = Array.from({ length: 41 }, (_, i) => 10 ** (-4 + (i * 6) / 40));
/** EM rounds from a flat start, and from the previous fit (the population moves slowly). */
const EM_ROUNDS = 200;
const EM_ROUNDS_WARM = 20;
/**
 * Each grid point stands for a Gamma of this shape around it (a spread of ±25%, a little under the
 * spacing), so a busy log's long record is not rounded to the nearest grid point.
 */
const SHAPE = 16;

/** Log marginal likelihood of c sessions over t hours under the Gamma(SHAPE, SHAPE/r) component, up to terms that do not depend on r. */
function logMarginal(rate: number, sessions: number, hours: number): number {
  const b = SHAPE / rate;
  return SHAPE * Math.log(b / (b + hours)) + (hours > 0 ? sessions * Math.log(hours / (b + hours)) : 0);
}

/** Marginal likelihoods of one log under each component (centred on `rates`), scaled so the largest is 1. */
function marginals(rates: readonly number[], sessions: number, hours: number): number[] {
  const logs = rates.map((r) => logMarginal(r, sessions, hours));
  const top = Math.max(...logs);
  return logs.map((x) => Math.exp(x - top));
}

/**
 * What a log's session rate is believed to be before its own count is seen: either a Gamma
 * (the configured prior, `sessions` over `hours`) or a distribution over a grid of rates fitted to
 * the watched logs of one kind. Plus the number of changes an average session brings.
 */
export type RatePrior =
  | { kind: 'gamma'; sessions: number; hours: number; changesPerSession: number }
  | { kind: 'fitted'; rates: readonly number[]; weights: readonly number[]; changesPerSession: number };

/** The configured prior: priorEvents changes over priorHours, one change per session. */
export const configuredPrior = (config: Pick<ScheduleConfig, 'priorEvents' | 'priorHours'>): RatePrior => ({
  kind: 'gamma',
  sessions: config.priorEvents,
  hours: config.priorHours,
  changesPerSession: 1,
});

/** Posterior mean of the session rate of a log that had `sessions` over `hours` (Poisson counts). */
export function posteriorSessionRate(prior: RatePrior, sessions: number, hours: number): number {
  if (prior.kind === 'gamma') return (prior.sessions + sessions) / (prior.hours + hours);
  // A mixture of Gamma posteriors, weighted by each component's prior weight and marginal likelihood.
  const likelihood = marginals(prior.rates, sessions, hours);
  let mass = 0;
  let mean = 0;
  prior.rates.forEach((r, g) => {
    const p = (prior.weights[g] ?? 0) * (likelihood[g] ?? 0);
    mass += p;
    mean += (p * (SHAPE + sessions)) / (SHAPE / r + hours);
  });
  return mass > 0 ? mean / mass : 0;
}

/**
 * Empirical Bayes: the distribution of session rates among the watched logs of one kind, fitted
 * to their counts (the nonparametric maximum-likelihood estimate of Kiefer and Wolfowitz, by EM
 * on a log-spaced grid). Each log's posterior mean under it decides how far its own count is
 * trusted: a quiet log that happened to show one session is pulled back toward the many like it,
 * a busy log's long record stands. Unlike one Gamma, the grid fits a skewed population.
 */
export function fitSessionPrior(
  states: readonly RateState[],
  fallback: RatePrior,
  sessionGapHours: number,
  previous?: RatePrior,
): RatePrior {
  const observed = states.filter((s) => s.hours > 0);
  const totalSessions = observed.reduce((sum, s) => sum + s.sessions, 0);
  if (observed.length < MIN_LOGS || totalSessions < MIN_SESSIONS) return fallback;
  // Changes per session from the logs where independent changes rarely fall within one gap of
  // each other (rate × gap < 0.1): a busy log's changes run together by chance alone.
  const sparse = observed.filter((s) => (s.events / s.hours) * sessionGapHours < 0.1);
  const sparseSessions = sparse.reduce((sum, s) => sum + s.sessions, 0);
  const changesPerSession =
    sparseSessions >= MIN_SESSIONS / 2 ? sparse.reduce((sum, s) => sum + s.events, 0) / sparseSessions : 1;
  // Likelihood of each log under each component, scaled per log (the scale cancels in EM).
  const likelihood = observed.map((s) => marginals(GRID, s.sessions, s.hours));
  const warm = previous?.kind === 'fitted';
  let weights = warm ? [...previous.weights] : GRID.map(() => 1 / GRID.length);
  for (let round = 0; round < (warm ? EM_ROUNDS_WARM : EM_ROUNDS); round++) {
    const next = GRID.map(() => 0);
    for (const row of likelihood) {
      const mass = row.reduce((sum, l, g) => sum + l * (weights[g] ?? 0), 0);
      if (mass <= 0) continue;
      row.forEach((l, g) => (next[g] = (next[g] ?? 0) + (l * (weights[g] ?? 0)) / mass));
    }
    weights = next.map((w) => w / observed.length);
  }
  return { kind: 'fitted', rates: GRID, weights, changesPerSession };
}

/** The prior of each log kind: fitted to that kind's logs, or the configured one (learnPrior false). */
export function priorsByKind(
  logs: ReadonlyArray<{ log: LogKind; state: RateState }>,
  config: Pick<ScheduleConfig, 'priorEvents' | 'priorHours' | 'learnPrior' | 'sessionGapSeconds'>,
  previous?: (kind: LogKind) => RatePrior,
): (kind: LogKind) => RatePrior {
  const fallback = configuredPrior(config);
  const priors = new Map<LogKind, RatePrior>();
  if (config.learnPrior) {
    for (const kind of new Set(logs.map((l) => l.log))) {
      priors.set(
        kind,
        fitSessionPrior(
          logs.filter((l) => l.log === kind).map((l) => l.state),
          fallback,
          config.sessionGapSeconds / 3600,
          previous?.(kind),
        ),
      );
    }
  }
  return (kind) => priors.get(kind) ?? fallback;
}
