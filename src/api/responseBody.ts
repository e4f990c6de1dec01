import type { Readable } from 'node:stream';
import { ApiMalformedResponseError, ApiResponseTooLargeError } from './apiErrors.js';

type Headers = Record<string, string | string[] | undefined>;
type Body = Readable & { destroy(error?: Error): void };

/** Where a body is read, for messages and limits. */
export interface BodyContext {
  path: string;
  requestId: string | undefined;
  maxBytes: number;
}

/** Reads and parses a 2xx body; throws ApiErrors for what is wrong with it. */
export type BodyReader = (body: Body, headers: Headers, context: BodyContext) => Promise<unknown>;

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Drops the rest of a body unread; an abort undici reports on it later must not go unheard (a crash). */
export function discardBody(body: Body): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** The default reader: the whole body up to the cap, then JSON.parse. */
export const readJsonBody: BodyReader = async (body, headers, context) => {
  const text = await readCappedBody(body, headers, context.maxBytes, { path: context.path });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ApiMalformedResponseError(
      `response to GET ${context.path} is not JSON (request ${context.requestId ?? 'without id'})`,
      context.path,
      context.requestId,
    );
  }
};

/** How much of an error answer (a problem document) is read; the rest is discarded. */
export const ERROR_BODY_BYTES = 64 * 1024;

/**
 * Reads a response body as UTF-8, aborting as soon as it exceeds `maxBytes`: a hostile answer
 * (a 200 MB body) must never sit whole in memory. A Content-Length above the cap is refused before
 * reading. With `truncate`, an oversized body is cut at the cap instead (for error answers, whose
 * text is only shown).
 */
export async function readCappedBody(
  body: Body,
  headers: Headers,
  maxBytes: number,
  describe: { path: string; truncate?: boolean },
): Promise<string> {
  const declared = Number(headerValue(headers['content-length']));
  if (!describe.truncate && Number.isFinite(declared) && declared > maxBytes) {
    discardBody(body);
    throw new ApiResponseTooLargeError(
      `response to GET ${describe.path} declares ${declared} bytes, more than api.maxResponseBytes (${maxBytes})`,
      describe.path,
    );
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) {
      discardBody(body);
      if (describe.truncate) {
        chunks.push(chunk.subarray(0, chunk.length - (total - maxBytes)));
        break;
      }
      throw new ApiResponseTooLargeError(
        `response to GET ${describe.path} is larger than api.maxResponseBytes (${maxBytes}); reading stopped there`,
        describe.path,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
