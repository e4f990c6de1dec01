import type { ServerResponse } from 'node:http';

/** Problem types of the feed, relative to the feed's URL (RFC 9457). */
export type FeedProblemType =
  | 'invalid-parameter'
  | 'unauthorized'
  | 'cursor-gone'
  | 'too-many-streams'
  | 'too-many-waits'
  | 'too-many-pages'
  | 'not-found'
  | 'journal-unavailable'
  | 'method-not-allowed'
  | 'tenant-elsewhere';

/** Answers with an RFC 9457 problem document. */
export function sendProblem(
  res: ServerResponse,
  status: number,
  type: FeedProblemType,
  title: string,
  detail: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ type: `/v1/problems/${type}`, title, status, detail, ...extra });
  res
    .writeHead(status, { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...headers })
    .end(body);
}
