import { LOG_KINDS } from '../logs.js';
import type { FieldError, ReplayForm, ReplayRequest } from './consoleForms.js';
import { tenantPath, type Viewer } from './consoleLayout.js';
import { html, type SafeHtml } from './htmlTemplate.js';

export interface ReplayPreview {
  request: ReplayRequest;
  count: number;
}

/**
 * The replay view: a sink, a time range, a log and a type glob; the first submit counts what
 * would be queued, and only a second one, from the count, queues it (operators only).
 */
export function replayBody(options: {
  tenant: string;
  sinks: readonly string[];
  form: ReplayForm;
  errors: readonly FieldError[];
  preview: ReplayPreview | undefined;
  notice: string | undefined;
  viewer: Viewer;
}): SafeHtml {
  const { tenant, sinks, form, errors, preview, notice, viewer } = options;
  const action = tenantPath(tenant, '/replay');
  const swap = html`hx-post="${action}" hx-select="#replay" hx-target="#replay" hx-swap="outerHTML"`;
  const errorOf = (field: string) => errors.find((e) => e.field === field);
  const described = (field: string) =>
    errorOf(field)
      ? html`aria-invalid="true" aria-describedby="${field}-error"`
      : html`aria-describedby="${field}-hint"`;
  const fieldError = (field: string, hint: string) => {
    const error = errorOf(field);
    return error
      ? html`<span class="error" id="${field}-error">${field}: ${error.message}</span>`
      : html`<span class="hint" id="${field}-hint">${hint}</span>`;
  };
  const input = (field: keyof ReplayForm, label: string, hint: string, placeholder = '') =>
    html`<label for="replay-${field}">${label}</label>
      <input
        id="replay-${field}"
        name="${field}"
        value="${form[field]}"
        placeholder="${placeholder}"
        autocomplete="off"
        ${described(field)}
      />
      ${fieldError(field, hint)}`;
  const choice = (field: 'sink' | 'log', label: string, none: string, values: readonly string[], hint: string) =>
    html`<label for="replay-${field}">${label}</label>
      <select id="replay-${field}" name="${field}" ${described(field)}>
        ${[
          html`<option value="">${none}</option>`,
          ...values.map((v) => html`<option ${v === form[field] ? html`selected` : ''}>${v}</option>`),
        ]}
      </select>
      ${fieldError(field, hint)}`;
  const hidden = (f: ReplayForm) =>
    html`${(['sink', 'since', 'until', 'log', 'type'] as const).map((k) => html`<input type="hidden" name="${k}" value="${f[k]}" />`)}`;
  return html`<div id="replay">
    <p role="status" class="notice">${notice ?? ''}</p>
    ${
      errors.length > 0
        ? html`<div class="error" role="alert">
            <p>The replay was not counted:</p>
            <ul>
              ${errors.map((e) => html`<li><a href="#replay-${e.field}">${e.field}</a>: ${e.message}</li>`)}
            </ul>
          </div>`
        : ''
    }
    <form class="card" method="post" action="${action}" ${swap}>
      <input type="hidden" name="csrf" value="${viewer.csrf}" /><input type="hidden" name="action" value="count" />
      ${choice('sink', 'Sink', 'choose a sink', sinks, 'where the events go again')}
      ${input('since', 'Since', 'ingested at or after: ISO 8601 with a zone, e.g. 2026-11-20T00:00:00Z')}
      ${input('until', 'Until', 'ingested before; empty for now')}
      ${choice('log', 'Log', 'every log', LOG_KINDS, 'one log, or all')}
      ${input('type', 'Type', 'a glob over the event type (* and ?); empty for every type', 'com.example.skills.*')}
      <button type="submit">Count events</button>
    </form>
    ${
      preview
        ? html`<section class="card" aria-labelledby="preview-title">
            <h2 id="preview-title">
              ${preview.count} event${preview.count === 1 ? '' : 's'} would be queued for ${preview.request.sink}
            </h2>
            ${
              viewer.role !== 'operator'
                ? html`<p class="hint">Your token is read-only: an operator token may queue the replay.</p>`
                : preview.count === 0
                  ? html`<p>Nothing to queue.</p>`
                  : html`<form method="post" action="${action}" ${swap}>
                        <input type="hidden" name="csrf" value="${viewer.csrf}" /><input
                          type="hidden"
                          name="action"
                          value="queue"
                        />${hidden(form)}<button type="submit">
                          Queue ${preview.count} event${preview.count === 1 ? '' : 's'}
                        </button>
                      </form>
                      <p class="hint">
                        The tenant's holder delivers them; replayed events go out again even if they were delivered
                        before.
                      </p>`
            }
          </section>`
        : ''
    }
  </div>`;
}
