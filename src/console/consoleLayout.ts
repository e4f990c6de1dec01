import type { ConsoleRole } from './consoleConfig.js';
import { html, type SafeHtml } from './htmlTemplate.js';

/** The static files a page links to, each at a path that changes with its content, with its SRI hash. */
export interface PageAssets {
  css: { path: string; integrity: string };
  scripts: readonly { path: string; integrity: string }[];
}

/** Who is looking, and the CSRF token their forms carry. */
export interface Viewer {
  role: ConsoleRole;
  csrf: string;
}

export type TenantView = 'logs' | 'sinks' | 'dead-letters' | 'replay' | 'tail';

export const TENANT_VIEWS: readonly { view: TenantView; label: string; path: string }[] = [
  { view: 'logs', label: 'Logs', path: '' },
  { view: 'sinks', label: 'Sinks', path: '/sinks' },
  { view: 'dead-letters', label: 'Dead letters', path: '/dead-letters' },
  { view: 'replay', label: 'Replay', path: '/replay' },
  { view: 'tail', label: 'Live tail', path: '/tail' },
];

/** `/console/tenants/<name>`: the name as one path segment. */
export function tenantPath(tenant: string, rest = ''): string {
  return `/console/tenants/${encodeURIComponent(tenant)}${rest}`;
}

// htmx's own settings: no eval, no inline style it would add (the CSP refuses both), and a 4xx
// answer (a form with errors) swapped in like any other, since it carries the page to show.
const HTMX_CONFIG = JSON.stringify({
  allowEval: false,
  allowScriptTags: false,
  includeIndicatorStyles: false,
  // Settling copies these attributes across a swap; a `style` copied is an inline style the CSP refuses.
  attributesToSettle: ['class', 'width', 'height'],
  selfRequestsOnly: true,
  historyCacheSize: 0,
  responseHandling: [
    { code: '204', swap: false },
    { code: '[234]..', swap: true },
    { code: '...', swap: false, error: true },
  ],
});

interface LayoutOptions {
  title: string;
  assets: PageAssets;
  viewer?: Viewer | undefined;
  tenant?: string | undefined;
  view?: TenantView | undefined;
  body: SafeHtml;
}

export function layout(options: LayoutOptions): string {
  const { title, assets, viewer, tenant, view, body } = options;
  const scripts = assets.scripts.map((s) => html`<script src="${s.path}" integrity="${s.integrity}" defer></script>`);
  const tenantNav = tenant
    ? html`<nav aria-label="Tenant ${tenant}">
        <ul class="tabs">
          ${TENANT_VIEWS.map(
            (v) =>
              html`<li>
                <a href="${tenantPath(tenant, v.path)}" ${v.view === view ? html`aria-current="page"` : ''}
                  >${v.label}</a
                >
              </li>`,
          )}
        </ul>
      </nav>`
    : '';
  const account = viewer
    ? html`<form class="sign-out" method="post" action="/console/sign-out">
        <input type="hidden" name="csrf" value="${viewer.csrf}" />
        <span class="role">Signed in: ${viewer.role}</span> <button type="submit">Sign out</button>
      </form>`
    : '';
  return `<!doctype html>\n${
    html`<html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <link rel="icon" href="data:," />
        <meta name="htmx-config" content="${HTMX_CONFIG}" />
        <title>${title} · changefeed console</title>
        <link rel="stylesheet" href="${assets.css.path}" integrity="${assets.css.integrity}" />
        ${scripts}
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header>
          <nav aria-label="Console">
            <a class="brand" href="/console">changefeed console</a
            >${tenant ? html` <span aria-hidden="true">›</span> <a href="${tenantPath(tenant)}">${tenant}</a>` : ''}
          </nav>
          ${account} ${tenantNav}
        </header>
        <main id="main">
          <h1>${title}</h1>
          ${body}
        </main>
      </body>
    </html>`.text
  }\n`;
}

export function signInBody(error: string | undefined): SafeHtml {
  return html`<form class="card" method="post" action="/console/sign-in">
    ${error ? html`<p class="error" role="alert" id="token-error">${error}</p>` : ''}
    <label for="token">Console token</label>
    <input
      id="token"
      name="token"
      type="password"
      autocomplete="current-password"
      required
      ${error ? html`aria-invalid="true" aria-describedby="token-error"` : ''}
    />
    <button type="submit">Sign in</button>
    <p class="hint">
      A token of <code>console.tokens</code> or <code>console.tokenFiles</code>; its role decides what you may change.
    </p>
  </form>`;
}

export function messageBody(message: string, field?: string): SafeHtml {
  return html`<p class="error" role="alert">${field ? html`<strong>${field}</strong>: ` : ''}${message}</p>
    <p><a href="/console">Back to the tenants</a></p>`;
}

/** A time as people read it (UTC), marked up with its ISO form. */
export function time(ms: number | null): SafeHtml | string {
  if (ms === null) return '–';
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')}Z</time>`;
}
