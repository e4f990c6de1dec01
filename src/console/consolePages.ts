import type { DeadLetter } from '../store/storeRecords.js';
import type { FieldError } from './consoleForms.js';
import { tenantPath, time, type Viewer } from './consoleLayout.js';
import { DEAD_LETTERS_SHOWN, type BudgetRow, type LogRow, type SinkRow } from './consoleReads.js';
import type { TenantPlacement } from './consoleSource.js';
import { budgetChart, formatSeconds, freshnessChart, type ChartSlot } from './hourCharts.js';
import { html, type SafeHtml } from './htmlTemplate.js';

/** The console's views of the tenants and of one tenant's logs, sinks, dead letters and live tail. */

export interface TenantSummary {
  name: string;
  placement: TenantPlacement;
  keyFingerprint: string;
  lastError: string | null;
  eventsLastHour: number | null;
}

export function placementText(placement: TenantPlacement): string {
  switch (placement.kind) {
    case 'here':
      return 'running on this replica';
    case 'held':
      return `held by ${placement.holder}${placement.live ? '' : ' (not answering)'}`;
    case 'idle':
      return 'not running';
    case 'failed':
      return `failed to start: ${placement.error}`;
  }
}

export function tenantsBody(rows: readonly TenantSummary[]): SafeHtml {
  if (rows.length === 0) return html`<p>No tenant is configured.</p>`;
  return live(
    '/console',
    table(
      'Tenants this replica knows; everything is read from the store.',
      ['Tenant', 'Holder and state', 'Key', 'Events last hour', 'Last error'],
      '',
      rows.map(
        (r) =>
          html`<tr>
            <th scope="row"><a href="${tenantPath(r.name)}">${r.name}</a></th>
            <td class="${r.placement.kind === 'failed' ? 'bad' : ''}">${placementText(r.placement)}</td>
            <td><code>${r.keyFingerprint}</code></td>
            <td class="num">${r.eventsLastHour ?? '–'}</td>
            <td class="${r.lastError ? 'bad' : ''}">${r.lastError ?? ''}</td>
          </tr>`,
      ),
    ),
  );
}

export function logsBody(
  tenant: TenantSummary,
  logs: readonly LogRow[],
  budget: BudgetRow | null,
  slots: readonly ChartSlot[],
): SafeHtml {
  return live(
    tenantPath(tenant.name),
    html`<p>
        ${placementText(tenant.placement)}; key
        <code>${tenant.keyFingerprint}</code
        >.${budget ? html` Budget as of ${time(budget.at)}: ${budget.allowancePerHour} requests per hour allowed${budget.serverRemaining === null ? '' : `, ${budget.serverRemaining} left in the service's window`}${budget.blockedUntil ? html`, <strong>paused after a 429 until ${time(budget.blockedUntil)}</strong>` : ''}.` : ' No budget recorded yet.'}
      </p>
      <div class="charts">
        <figure>
          ${freshnessChart(slots)}
          <figcaption>
            Freshness: how far behind the stalest log polled in each hour was (red: polls failed).
          </figcaption>
        </figure>
        <figure>
          ${budgetChart(slots)}
          <figcaption>Read budget: requests per hour (bars) against the allowance (line).</figcaption>
        </figure>
      </div>
      ${table(
        'Watched logs',
        ['Log', 'Object', 'Status', 'Last poll', 'Covered until', 'Lag', 'Learned rate /h', 'Next poll', 'Last error'],
        'No log is watched yet.',
        logs.map(
          (l) =>
            html`<tr>
              <td>${l.log}</td>
              <td>${l.objectId || '–'}</td>
              <td class="${l.status === 'active' ? '' : 'bad'}">
                ${l.status}${l.statusReason ? `: ${l.statusReason}` : ''}
              </td>
              <td>${time(l.lastPollAt)}</td>
              <td>${time(l.windowEnd)}</td>
              <td class="num">${l.lagSeconds === null ? '–' : formatSeconds(l.lagSeconds)}</td>
              <td class="num">${l.ratePerHour === null ? '–' : l.ratePerHour.toFixed(2)}</td>
              <td>${time(l.nextPollAt)}</td>
              <td class="${l.lastError ? 'bad' : ''}">
                ${l.consecutiveFailures > 0 ? `${l.consecutiveFailures} failed: ` : ''}${l.lastError ?? ''}
              </td>
            </tr>`,
        ),
      )}`,
  );
}

export function sinksBody(tenant: string, sinks: readonly (SinkRow & { perMinute: number | null })[]): SafeHtml {
  return live(
    tenantPath(tenant, '/sinks'),
    table(
      'Sinks, as their worker last recorded them',
      [
        'Sink',
        'Type',
        'State',
        'Circuit',
        'Pending',
        'Oldest pending',
        'Delivered',
        'Delivered /min',
        'Dead',
        'Last error',
      ],
      'No sink is registered yet.',
      sinks.map(
        (s) =>
          html`<tr>
            <th scope="row">${s.name}</th>
            <td>${s.type}</td>
            <td class="${s.disabledReason || !s.connected ? 'bad' : 'good'}">
              ${s.disabledReason ? `disabled: ${s.disabledReason}` : !s.active ? 'inactive' : s.connected ? 'connected' : 'not connected'}
            </td>
            <td class="${s.circuit === 'closed' ? '' : 'bad'}">${s.circuit}</td>
            <td class="num">${s.pending}</td>
            <td class="num">${s.oldestPendingAgeSeconds === null ? '–' : formatSeconds(s.oldestPendingAgeSeconds)}</td>
            <td class="num" data-sink-delivered="${s.name}">${s.delivered}</td>
            <td class="num">${s.perMinute === null ? '–' : s.perMinute.toFixed(1)}</td>
            <td class="num ${s.dead > 0 ? 'bad' : ''}">
              ${s.dead > 0 ? html`<a href="${tenantPath(tenant, '/dead-letters')}">${s.dead}</a>` : '0'}
            </td>
            <td class="${s.lastError ? 'bad' : ''}">${s.lastError ?? ''}</td>
          </tr>`,
      ),
    ),
  );
}

export function deadLettersBody(
  tenant: string,
  letters: readonly DeadLetter[],
  viewer: Viewer,
  notice: string | undefined,
): SafeHtml {
  const operator = viewer.role === 'operator';
  const action = tenantPath(tenant, '/dead-letters/retry');
  const swap = html`hx-post="${action}" hx-select="#dead-letters" hx-target="#dead-letters" hx-swap="outerHTML"`;
  const retryForm = (fields: SafeHtml, label: string, name: string) =>
    html`<form method="post" action="${action}" ${swap}>
      <input type="hidden" name="csrf" value="${viewer.csrf}" />${fields}<button type="submit" aria-label="${name}">
        ${label}
      </button>
    </form>`;
  return html`<div id="dead-letters">
    <p role="status" class="notice">${notice ?? ''}</p>
    ${
      !operator
        ? html`<p class="hint">Your token is read-only: an operator token may retry.</p>`
        : letters.length > 0
          ? retryForm(html`<input type="hidden" name="all" value="1" />`, 'Retry all', 'Retry all dead letters')
          : ''
    }
    ${table(
      `Dead letters: events a sink gave up on${letters.length >= DEAD_LETTERS_SHOWN ? ` (the first ${DEAD_LETTERS_SHOWN})` : ''}`,
      [
        'Sink',
        'Event',
        'Type',
        'Attempts',
        'Last status',
        'Answer',
        'Died',
        ...(operator ? [html`<span class="visually-hidden">Action</span>`] : []),
      ],
      'No dead letters.',
      letters.map(
        (d) =>
          html`<tr data-event-id="${d.eventId}">
            <td>${d.sink}</td>
            <td><code>${d.eventId}</code><br /><span class="hint">${d.log} ${d.objectId}</span></td>
            <td>${d.type}</td>
            <td class="num">${d.attempts}</td>
            <td class="num">${d.lastStatus ?? '–'}</td>
            <td>
              <details>
                <summary>${d.lastError ?? 'no error recorded'}</summary>
                <pre>${d.lastResponse ?? ''}</pre>
              </details>
            </td>
            <td>${time(d.deadAt)}</td>
            ${
              operator
                ? html`<td>
                    ${retryForm(
                      html`<input type="hidden" name="sink" value="${d.sink}" /><input
                          type="hidden"
                          name="eventId"
                          value="${d.eventId}"
                        />`,
                      'Retry',
                      `Retry ${d.eventId} to ${d.sink}`,
                    )}
                  </td>`
                : ''
            }
          </tr>`,
      ),
    )}
  </div>`;
}

export function tailBody(tenant: string, type: string | undefined, error: FieldError | undefined): SafeHtml {
  const src = `${tenantPath(tenant, '/tail/events')}${type ? `?type=${encodeURIComponent(type)}` : ''}`;
  return html`<form class="card inline" method="get" action="${tenantPath(tenant, '/tail')}">
      <label for="tail-type">Type</label>
      <input
        id="tail-type"
        name="type"
        value="${type ?? ''}"
        placeholder="*.skill.*"
        autocomplete="off"
        ${error ? html`aria-invalid="true" aria-describedby="type-error"` : ''}
      />
      <button type="submit">Filter</button>
      ${error ? html`<span class="error" id="type-error" role="alert">${error.field}: ${error.message}</span>` : ''}
    </form>
    ${
      error
        ? ''
        : html`<p class="hint" role="status" id="tail-status" data-tail-status>Connecting…</p>
            <ol class="tail" id="tail" data-tail-src="${src}" aria-live="polite" aria-label="Newest events first"></ol>`
    }`;
}

/** `body`, replaced every 5 seconds by the same part of the page at `path`. */
function live(path: string, body: SafeHtml): SafeHtml {
  return html`<div id="live" hx-get="${path}" hx-trigger="every 5s" hx-select="#live" hx-swap="outerHTML">
    ${body}
  </div>`;
}

/** A table with a header cell per column, and a row saying `empty` when there are no rows. */
function table(
  caption: string,
  columns: readonly (string | SafeHtml)[],
  empty: string,
  rows: readonly SafeHtml[],
): SafeHtml {
  return html`<div class="table-wrap">
    <table>
      <caption>
        ${caption}
      </caption>
      <thead>
        <tr>
          ${columns.map((column) => html`<th scope="col">${column}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${
          rows.length > 0
            ? rows
            : html`<tr>
                <td colspan="${columns.length}">${empty}</td>
              </tr>`
        }
      </tbody>
    </table>
  </div>`;
}
