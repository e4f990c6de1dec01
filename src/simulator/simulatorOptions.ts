import { z } from 'zod';
import type { Clock } from '../clock.js';

/**
 * Everything the built-in simulator can be told, declared once. The CLI (`changefeed simulate`)
 * maps its flags onto this schema; `clock` is the one option that is not data and so lives
 * beside it in SimulatorOptionsInput.
 */

/** Every scope the spec defines (section 5); the default key carries all of them. */
export const ALL_SCOPES: readonly string[] = [
  'skills',
  'people',
  'careers',
  'training',
  'flags',
  'org',
  'learning',
  'assessments',
  'certifications',
  'labels',
  'proficiency',
  'surveys',
].flatMap((resource) => [`${resource}:read`, `${resource}:write`]);

const share = z.number().min(0).max(1);

/** Most companies one simulator serves: well beyond the 1,000-tenant bench, still a bounded heap. */
export const MAX_COMPANIES = 10_000;

const faultOptionsSchema = z.object({
  errorRate: share
    .default(0)
    .describe(
      'Fraction of authenticated reads that fail transiently: mostly 500 internal-error ' +
        'problems, sometimes a 502 or 503 with a non-JSON body, as a gateway would send.',
    ),
  latencyMs: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe('Delay added to every response, in milliseconds of the injected clock.'),
  dateResolutionSeconds: z
    .number()
    .int()
    .min(1)
    .max(3_600)
    .default(1)
    .describe(
      'Resolution of the Date header, in seconds of the injected clock (HTTP dates count whole ' +
        'seconds): 60 is how a real Date header reads to a client whose clock runs 60 times faster.',
    ),
  slowRate: share.default(0).describe('Fraction of responses that are additionally delayed by slowMs.'),
  slowMs: z
    .number()
    .int()
    .min(0)
    .default(5000)
    .describe('Extra delay of a slow response, in milliseconds of the injected clock.'),
  malformedRate: share
    .default(0)
    .describe(
      'Fraction of successful list responses sent as 200 with a body that is not JSON or whose data is not an array.',
    ),
  trialExpired: z
    .boolean()
    .default(false)
    .describe('Answer every authenticated request with 403 trial_expired and an upgrade_url.'),
});

export const workloadSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('uniform') }).describe('Every object of a log receives events at the same rate.'),
  z
    .object({
      kind: z.literal('zipf'),
      s: z
        .number()
        .min(0)
        .default(1)
        .describe('Zipf exponent: the object of rank r gets a rate proportional to 1/r^s.'),
    })
    .describe('Per-object Poisson arrivals with Zipf-distributed rates: a few hot objects, a long cold tail.'),
  z
    .object({
      kind: z.literal('bursty'),
      s: z.number().min(0).default(1).describe('Zipf exponent used to draw the object of each edit session.'),
      sessionMin: z.number().int().min(1).default(5).describe('Fewest events in one edit session.'),
      sessionMax: z.number().int().min(1).default(30).describe('Most events in one edit session.'),
      sessionMinutes: z.number().positive().default(5).describe('How long one edit session lasts, in minutes.'),
    })
    .refine((w) => w.sessionMax >= w.sessionMin, {
      message: 'sessionMax must be at least sessionMin',
      path: ['sessionMax'],
    })
    .describe(
      'Edit sessions start at a Poisson rate; each puts sessionMin..sessionMax events on one ' +
        'Zipf-drawn object within sessionMinutes.',
    ),
]);

export type Workload = z.output<typeof workloadSchema>;

export const simulatorOptionsSchema = z
  .object({
    host: z.string().default('127.0.0.1').describe('Interface to listen on; loopback by default.'),
    port: z.number().int().min(0).max(65535).default(0).describe('TCP port; 0 picks any free port.'),
    seed: z
      .number()
      .int()
      .default(1)
      .describe('Seed of every random choice: the same seed and clock give the same activity.'),
    careers: z.number().int().min(0).default(20).describe('Number of careers (each with its own activity log).'),
    skills: z.number().int().min(0).default(20).describe('Number of skills (each with its own version log).'),
    eventsPerHour: z.number().min(0).default(600).describe('Total arrival rate across all logs, in events per hour.'),
    identityProviderShare: share
      .default(0.1)
      .describe('Fraction of events that go to the company-wide identity-provider log.'),
    skillShare: share
      .default(0.2)
      .describe('Fraction of events that go to skill version logs; the rest go to career logs.'),
    workload: workloadSchema
      .prefault({ kind: 'zipf' })
      .describe('How arrivals are spread over objects and time; Zipf with s=1 by default.'),
    historyHours: z
      .number()
      .min(0)
      .default(2)
      .describe('Hours of activity that already exist when the simulator starts.'),
    sortOrder: z
      .enum(['newest-first', 'oldest-first'])
      .default('newest-first')
      .describe('Order of activity pages, by performedAt then id.'),
    lateArrivals: z
      .object({
        share: share.default(0).describe('Fraction of entries that arrive with a performedAt in the past.'),
        maxDelaySeconds: z
          .number()
          .min(0)
          .default(120)
          .describe('Largest gap between performedAt and arrival of a late entry.'),
      })
      .prefault({})
      .describe('Entries that become visible after time windows covering their performedAt were already read.'),
    nullPerformedAtShare: share.default(0).describe('Fraction of entries whose performedAt is null.'),
    nullEventShare: share.default(0).describe('Fraction of entries whose event is null.'),
    unknownFieldsShare: share
      .default(0)
      .describe('Fraction of entries carrying fields the spec does not list (such as x_internal).'),
    readsPerHour: z
      .number()
      .int()
      .min(0)
      .default(1000)
      .describe('Allowance of the reads bucket of each key, per hourly window.'),
    companies: z
      .number()
      .int()
      .min(1)
      .max(MAX_COMPANIES)
      .default(1)
      .describe(
        'Companies served, each with its own careers, skills, identity-provider log and one ' +
          'full-scope key with its own reads bucket; a request is routed to its company by its key. ' +
          'The first company is the one of a single-company simulator: same seed, same key. The ' +
          'counts and rates above apply to each company.',
      ),
    recordRequests: z
      .boolean()
      .default(true)
      .describe(
        'Keep every request in `requests` for tests to inspect. Off where ' +
          'nothing reads them (the `simulate` command), since they grow with every request.',
      ),
    faults: faultOptionsSchema.prefault({}).describe('Injected failures.'),
  })
  .refine((o) => o.identityProviderShare + o.skillShare <= 1, {
    message: 'identityProviderShare + skillShare must not exceed 1',
    path: ['skillShare'],
  });

export type SimulatorOptionsInput = z.input<typeof simulatorOptionsSchema> & {
  /** Source of time for generation, headers and the reads bucket; defaults to the system clock. */
  clock?: Clock;
};

export type SimulatorOptions = z.output<typeof simulatorOptionsSchema> & { clock: Clock };
