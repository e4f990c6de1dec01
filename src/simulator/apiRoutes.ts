import { LOGS, type LogKind } from '../logs.js';
import { parseActivityQuery, parseListQuery, type Paging } from './activityQuery.js';
import type { ActivitySimulation } from './activitySimulation.js';
import type { Credential } from './apiKeys.js';
import type { ObjectLog } from './companyDirectory.js';
import { insufficientScopeProblem, notFoundProblem, validationProblem, type Problem } from './problemResponses.js';
import type { SortOrder } from './activityStore.js';

/** What a route decided, before the server adds the headers every response carries. */
export type Outcome =
  | { readonly kind: 'json'; readonly status: number; readonly body: unknown; readonly list?: boolean }
  | { readonly kind: 'problem'; readonly problem: Problem; readonly headers?: Readonly<Record<string, string>> }
  | { readonly kind: 'raw'; readonly status: number; readonly contentType: string; readonly body: string };

export interface RouteContext {
  readonly simulation: ActivitySimulation;
  readonly sortOrder: SortOrder;
  readonly credential: Credential;
  readonly path: string;
  readonly params: URLSearchParams;
  readonly now: number;
}

const PER_OBJECT_ACTIVITY = /^\/api\/v1\/(careers|skills)\/([^/]+)\/activity$/;

/** Dispatches an authenticated, counted GET to the endpoint it names. */
export function routeRead(ctx: RouteContext): Outcome {
  const { path } = ctx;
  if (path === '/api/v1/ping') {
    return { kind: 'json', status: 200, body: { data: { status: 'ok', serverTime: new Date(ctx.now).toISOString() } } };
  }
  if (path === '/api/v1/careers') return discoveryList(ctx, 'career');
  if (path === '/api/v1/skills') return discoveryList(ctx, 'skill');
  if (path === '/api/v1/identity-provider-events') return activityRead(ctx, 'identity_provider', null);
  const match = PER_OBJECT_ACTIVITY.exec(path);
  if (match) {
    const objectId = decodePathSegment(match[2] ?? '');
    if (objectId !== null) return activityRead(ctx, match[1] === 'careers' ? 'career' : 'skill', objectId);
  }
  return problem(notFoundProblem(`No endpoint at ${path}.`));
}

function activityRead(ctx: RouteContext, log: LogKind, objectId: string | null): Outcome {
  const scope = LOGS[log].scope;
  if (!ctx.credential.scopes.has(scope)) return problem(insufficientScopeProblem(scope));
  const parsed = parseActivityQuery(log, ctx.params);
  if (!parsed.ok) return problem(validationProblem(parsed.errors));
  if (objectId !== null && !ctx.simulation.directory.has(log as ObjectLog, objectId)) {
    return problem(notFoundProblem(`No ${log} with id '${objectId}' exists in this company.`));
  }
  const { filter, paging } = parsed.value;
  const matching = ctx.simulation.store.query(log, objectId, filter, ctx.now, ctx.sortOrder);
  const data = page(matching, paging).map((stored) => stored.entry);
  return {
    kind: 'json',
    status: 200,
    list: true,
    body: { data, pagination: { limit: paging.limit, offset: paging.offset } },
  };
}

function discoveryList(ctx: RouteContext, log: ObjectLog): Outcome {
  const scope = LOGS[log].scope;
  if (!ctx.credential.scopes.has(scope)) return problem(insufficientScopeProblem(scope));
  const parsed = parseListQuery(ctx.params, `${log} list`);
  if (!parsed.ok) return problem(validationProblem(parsed.errors));
  const objects = ctx.simulation.directory.list(log);
  const data = page(objects, parsed.value).map(({ id, name, createdAt }) => ({ id, name, createdAt }));
  return {
    kind: 'json',
    status: 200,
    list: true,
    body: { data, pagination: { limit: parsed.value.limit, offset: parsed.value.offset, total: objects.length } },
  };
}

function page<T>(items: readonly T[], paging: Paging): T[] {
  return items.slice(paging.offset, paging.offset + paging.limit);
}

function problem(p: Problem): Outcome {
  return { kind: 'problem', problem: p };
}

function decodePathSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}
