import { Counter, type Registry } from 'prom-client';

/** Every reason the feed's router answers a request itself (RouterAnswerReason), exported from the start. */
const REASONS = [
  ['4xx', 'unauthorized'],
  ['4xx', 'ticket_refused'],
  ['4xx', 'not_found'],
  ['3xx', 'redirected'],
  ['5xx', 'unavailable'],
] as const;

/**
 * The answers the feed listener gives before any tenant's feed handles a request (RouterAnswerReason).
 * Without a `tenant` label, so that a client without a token cannot create series by naming tenants;
 * `changefeed_feed_requests_total` counts what the tenants' feeds answer, and the two together count
 * every feed request.
 */
export class FeedRouterMetrics {
  private readonly answers: Counter<'status_class' | 'reason'>;

  constructor(registry: Registry) {
    this.answers = new Counter({
      name: 'changefeed_feed_router_answers_total',
      help:
        'Feed requests answered by the router before a tenant feed handles them, by status class and reason ' +
        '(unauthorized, ticket_refused, not_found, redirected, unavailable).',
      labelNames: ['status_class', 'reason'],
      registers: [registry],
    });
    for (const [statusClass, reason] of REASONS) this.answers.inc({ status_class: statusClass, reason }, 0);
  }

  answered(status: number, reason: (typeof REASONS)[number][1]): void {
    this.answers.inc({ status_class: `${Math.floor(status / 100)}xx`, reason });
  }
}
