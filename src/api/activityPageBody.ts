import { JSONParser, Tokenizer, TokenType } from '@streamparser/json';
import { ApiMalformedResponseError, ApiResponseTooLargeError } from './apiErrors.js';
import { isAbortError } from '../errors.js';
import { RAW_KEPT_BYTES } from './quarantinedEntry.js';
import { discardBody, headerValue, type BodyReader } from './responseBody.js';

/** Pages declared at most this long are read whole and parsed with JSON.parse (64 KiB, about 60 entries). */
const WHOLE_PAGE_BYTES = 64 * 1024;

/**
 * Reads an activity page as it streams in, keeping only the elements of its `data` array (other
 * envelope keys are dropped; once `data` is complete the rest of the body is read to its end, up
 * to the cap, without parsing: a body left unfinished is destroyed, which costs an AbortError with
 * its stack and, when the rest had not arrived, the pooled connection). A page
 * holding more entries than the `limit` asked for is refused at entry limit + 1, before the rest
 * is parsed: a hostile 100,000-entry page never becomes 100,000 objects. The body is capped at
 * maxBytes as it arrives; a refused one keeps its first RAW_KEPT_BYTES in the error. A page whose
 * Content-Length is at most WHOLE_PAGE_BYTES is parsed whole first (bounded by those bytes).
 */
export function activityPageReader(limit: number): BodyReader {
  return async (body, headers, context) => {
    const { path, requestId, maxBytes } = context;
    const where = `response to GET ${path}`;
    const request = `request ${requestId ?? 'without id'}`;
    const declared = Number(headerValue(headers['content-length']));
    const head: Buffer[] = [];
    let headBytes = 0;
    const keepHead = (chunk: Buffer): void => {
      if (headBytes >= RAW_KEPT_BYTES) return;
      head.push(chunk.subarray(0, RAW_KEPT_BYTES - headBytes));
      headBytes += Math.min(chunk.length, RAW_KEPT_BYTES - headBytes);
    };
    const headText = (): string => Buffer.concat(head).toString('utf8');
    if (Number.isFinite(declared) && declared > maxBytes) {
      // A body that fails before its head is read fails the page as the exchange it is (timeout,
      // connection): a head cut wherever the break fell would be a different quarantine record of
      // the same oversized entry at each read, and a shutdown's abort would look like a refusal.
      try {
        for await (const chunk of body as AsyncIterable<Buffer>) {
          keepHead(chunk);
          if (headBytes >= RAW_KEPT_BYTES) break;
        }
      } finally {
        discardBody(body);
      }
      throw new ApiResponseTooLargeError(
        `${where} declares ${declared} bytes, more than api.maxResponseBytes (${maxBytes})`,
        path,
        requestId,
        headText(),
      );
    }
    // A small page declared as such is parsed natively (the stream parser costs far more CPU and
    // garbage for pages of an entry or none). What it does not answer plainly (not JSON, no `data`
    // array, too many entries) goes through the stream parser after all, so the refusals stay the same.
    let chunks: AsyncIterable<Buffer> | Iterable<Buffer> = body as AsyncIterable<Buffer>;
    if (Number.isFinite(declared) && declared <= Math.min(WHOLE_PAGE_BYTES, maxBytes)) {
      const parts: Buffer[] = [];
      let failure: { error: unknown } | undefined;
      try {
        for await (const chunk of body as AsyncIterable<Buffer>) parts.push(chunk);
      } catch (error) {
        // A body cut short (fewer bytes than declared) is the stream parser's to judge: it accepts
        // one that ends after a whole `data`.
        failure = { error };
      } finally {
        discardBody(body);
      }
      const whole = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
      const data = failure ? undefined : plainPageData(whole, limit);
      if (data !== undefined) return { data };
      chunks = failure ? replayThenFail(whole, failure.error) : [whole];
    }
    const data: unknown[] = [];
    let dataIsArray: boolean | undefined;
    // Set once `data` is complete: nothing after it is needed, so the rest is not parsed.
    let dataDone = false;
    let refusal: Error | undefined;
    const parser = new JSONParser({ paths: ['$.data', '$.data.*'], keepStack: false });
    parser.onValue = ({ value, stack, parent }) => {
      if (stack.length === 1) {
        dataIsArray = Array.isArray(value);
        dataDone = true;
        return;
      }
      if (!Array.isArray(parent)) return;
      data.push(value);
      if (data.length > limit) {
        refusal ??= new ApiMalformedResponseError(
          `${where} holds more than the ${limit} entries the limit asked for (${request})`,
          path,
          requestId,
        );
      }
    };
    let total = 0;
    try {
      for await (const chunk of chunks) {
        total += chunk.length;
        if (dataDone) {
          // A trailer beyond the cap is not read further; the page is whole without it.
          if (total > maxBytes) break;
          continue;
        }
        keepHead(chunk);
        if (total > maxBytes) {
          refusal ??= new ApiResponseTooLargeError(
            `${where} is larger than api.maxResponseBytes (${maxBytes}); reading stopped there (${request})`,
            path,
            requestId,
            headText(),
          );
        }
        if (refusal) break;
        parser.write(chunk);
        if (refusal) break;
      }
      if (!refusal && !dataDone && !parser.isEnded) parser.end();
    } catch (error) {
      if (refusal) throw refusal;
      // What failed came after `data`, which is whole: the page is read.
      if (!dataDone) {
        if (endedByExchange(error)) throw error;
        throw new ApiMalformedResponseError(
          `${where} is not JSON: ${(error as Error).message} (${request})`,
          path,
          requestId,
        );
      }
    } finally {
      discardBody(body);
    }
    if (refusal) throw refusal;
    if (dataIsArray !== true)
      throw new ApiMalformedResponseError(`${where} has no "data" array (${request})`, path, requestId);
    return { data };
  };
}

/**
 * Whether a body failed because its exchange was ended (its time limit, or the caller's abort such
 * as a shutdown): the client names that (API_TIMEOUT, or the abort passed through), where calling
 * the page "not JSON" would send an operator looking at the service's bodies.
 */
function endedByExchange(error: unknown): boolean {
  return isAbortError(error) || (error instanceof Error && error.name === 'TimeoutError');
}

/** The bytes a body brought before it failed, then its failure, as the body itself gave them. */
function* replayThenFail(whole: Buffer, error: unknown): Iterable<Buffer> {
  if (whole.length > 0) yield whole;
  throw error;
}

/**
 * Refuses invalid UTF-8 as the stream parser does (Buffer's toString would put U+FFFD in its place
 * and accept the page) and keeps a byte-order mark, which JSON.parse then refuses, to the stream
 * parser's judgement.
 */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Every spelling of the key `data` in JSON text, escapes included. */
const DATA_KEY = /"(?:d|\\u0064)(?:a|\\u0061)(?:t|\\u0074)(?:a|\\u0061)"/g;

/**
 * Whether the text may hold more than one key `data`. JSON.parse keeps the last of them and the
 * stream parser gathers the entries of all, so such a page is left to the stream parser. Entries
 * carry no `data` key (spec 2.8), so a plain page has one; more only costs the native parse.
 */
function mayRepeatDataKey(text: string): boolean {
  const first = text.indexOf('"data"');
  if (first !== text.lastIndexOf('"data"')) return true;
  return text.includes('\\u') && (text.match(DATA_KEY)?.length ?? 0) > 1;
}

/** The `data` of a page that is JSON with a `data` array of at most `limit` entries; undefined otherwise. */
function plainPageData(whole: Buffer, limit: number): unknown[] | undefined {
  let page: unknown;
  try {
    const text = strictUtf8.decode(whole);
    if (mayRepeatDataKey(text)) return undefined;
    page = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof page !== 'object' || page === null) return undefined;
  const data = (page as { data?: unknown }).data;
  return Array.isArray(data) && data.length <= limit ? data : undefined;
}

/**
 * The oversized entry's own first bytes in a refused page's head, cut at a fixed length: envelope
 * keys before `data` may differ from one read to the next, and the page's first bytes would make
 * a new quarantine record per read. Undefined when no entry of `data` starts in the head: the page
 * is too large for what its envelope holds, not for an entry.
 */
export function oversizedEntryHead(pageHead: string): string | undefined {
  const bytes = Buffer.from(pageHead, 'utf8');
  const start = firstDataElementOffset(bytes);
  if (start === undefined) return undefined;
  return bytes.subarray(start, start + RAW_KEPT_BYTES / 2).toString('utf8');
}

/** The byte offset of the first element of the top-level `data` array, if `head` reaches it. */
function firstDataElementOffset(head: Buffer): number | undefined {
  const tokenizer = new Tokenizer();
  let depth = 0;
  let expectKey = false;
  let key: string | undefined;
  let arrayOpened = false;
  let found: number | undefined;
  tokenizer.onToken = ({ token, value, offset }) => {
    if (found !== undefined) return;
    if (arrayOpened) {
      if (token !== TokenType.RIGHT_BRACKET) found = offset;
      arrayOpened = false;
      return;
    }
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) {
      depth++;
      if (depth === 2 && token === TokenType.LEFT_BRACKET && key === 'data') arrayOpened = true;
      expectKey = depth === 1 && token === TokenType.LEFT_BRACE;
      return;
    }
    if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) depth--;
    if (depth !== 1) return;
    if (token === TokenType.COMMA) expectKey = true;
    else if (expectKey && token === TokenType.STRING) {
      key = value as string;
      expectKey = false;
    }
  };
  try {
    tokenizer.write(head);
  } catch {
    // A head that is not JSON: the page's bytes are all there is to show.
  }
  return found;
}
