// Request bodies: JSON only for writes (415 otherwise), size limits of docs/reference/contract.md §8 (413),
// malformed JSON is 400 `malformed_json`. The raw text is kept because purchases store it verbatim.
// koa-body reads the bytes; they are decoded as UTF-8 strictly (RFC 8259 8.1: a body that is not
// UTF-8 is malformed, and would not be stored verbatim were its bad bytes replaced). parseJson (not
// co-body's bourne, which refuses a `__proto__` key as if the JSON were malformed) parses it:
// `__proto__` is then an ordinary own key the validators judge; a name given twice is refused.
import type { Context, Next } from 'koa';
import { koaBody } from 'koa-body';
import { DuplicateKeyError, nestsDeeperThan, parseJson } from '../json.ts';
import { ApiError, invalidRequest, type ErrorIssue } from './errors.ts';
import { capIssues } from './validate.ts';

export const LIMITS = {
  standard: 64 * 1024, // purchases, policies, simulations
  webhooks: 16 * 1024, // webhook management
} as const;

/** Objects and arrays nest at most this deep in any JSON body (the body itself is level 1). */
export const MAX_JSON_DEPTH = 32;

/**
 * The issue path of the whole body: `body` on purchases and the other operations, the empty string on
 * webhook management (docs/reference/contract.md §7).
 */
export type WholeBody = 'body' | '';

/** `what` names the collections in the message: YAML manifests have mappings and sequences. */
export const tooDeep = (what = 'JSON objects and arrays', wholeBody: WholeBody = 'body') =>
  invalidRequest([{ path: wholeBody, code: 'TOO_DEEP', message: `${what} nest at most ${MAX_JSON_DEPTH} levels deep.` }]);

/**
 * What every parsed body and manifest must be beyond JSON's grammar, checked before anything recursive
 * (validation, canonical JSON, storage) sees it, walking it without recursion: nested at most
 * MAX_JSON_DEPTH deep, and text, names included, that is Unicode. A `\ud800` escape without its pair
 * is valid JSON (RFC 8259 8.2) but no UTF-8 can hold it: stored, it would come back as U+FFFD or be
 * refused by the store, so what was accepted would not be what is read back (docs/reference/decisions.md).
 */
/** In a `u` regular expression a pair is one code point: only a surrogate alone is in the class Cs. */
const LONE = /\p{Cs}/u;

/** A value met on the walk, with what its path is made of; the path itself is built only for an issue. */
interface Visit {
  value: unknown;
  depth: number;
  /** The name it is held under ('' for the body). */
  name: string;
  /** The object or array holding it, undefined for the body itself. */
  up: Visit | undefined;
}

/** `metadata.list.1`: the names from the body down, the body's own path when it is the body. */
function pathOf(visit: Visit, wholeBody: WholeBody): string {
  if (visit.up === undefined) return wholeBody;
  let path = visit.name;
  for (let at = visit.up; at.up !== undefined; at = at.up) path = `${at.name}.${path}`;
  return path;
}

export function checkParsed(value: unknown, what?: string, wholeBody: WholeBody = 'body'): void {
  const issues: ErrorIssue[] = [];
  const stack: Visit[] = [{ value, depth: 1, name: '', up: undefined }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    const current = visit.value;
    if (LONE.test(visit.name)) issues.push(loneSurrogate(pathOf(visit, wholeBody), 'name'));
    if (typeof current === 'string' && LONE.test(current)) issues.push(loneSurrogate(pathOf(visit, wholeBody), 'text'));
    if (current === null || typeof current !== 'object') continue;
    if (visit.depth > MAX_JSON_DEPTH) throw tooDeep(what, wholeBody);
    // Pushed last to first: the issues come in the order the body is written in.
    const names = Object.keys(current);
    for (let i = names.length - 1; i >= 0; i--) {
      stack.push({ value: (current as Record<string, unknown>)[names[i]], depth: visit.depth + 1, name: names[i], up: visit });
    }
  }
  if (issues.length > 0) throw invalidRequest(capIssues(issues));
}

const loneSurrogate = (path: string, what: 'text' | 'name'): ErrorIssue => ({
  path,
  code: 'LONE_SURROGATE',
  message: `The ${what} at "${path || 'body'}" holds a lone UTF-16 surrogate (an escape from \\ud800 to \\udfff without its pair), which is not Unicode text.`,
});

/** The media type without parameters, lower-cased (RFC 9110 8.3.1: media types are case-insensitive). */
export const mediaType = (ctx: Context): string => ctx.request.type.trim().toLowerCase();

/** The JSON media types koa-body is asked to read. */
export const JSON_TYPES = ['application/json', 'application/*+json'];

export const isJsonType = (type: string) => type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
const isJson = (ctx: Context) => isJsonType(mediaType(ctx));

const unsupportedMediaType = () => new ApiError(415, 'unsupported_media_type', 'Send the body as Content-Type: application/json.');

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Bytes decoded as UTF-8 strictly; `what` names them in the malformed_json refusal. */
export function utf8Text(bytes: Uint8Array, what = 'The request body'): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new ApiError(400, 'malformed_json', `${what} is not valid UTF-8.`);
  }
}

/** JSON text parsed as parseJson does, its errors as the API answers them. */
export function parseBodyJson(text: string, wholeBody: WholeBody = 'body'): unknown {
  // Counted on the text first: a megabyte of '[' (a manifest may be one) would hold the event loop for
  // seconds in the parse and the duplicate-name scan; the count answers in one pass.
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw tooDeep(undefined, wholeBody);
  try {
    return parseJson(text);
  } catch (error) {
    if (error instanceof DuplicateKeyError) {
      throw invalidRequest([{ path: error.path, code: 'DUPLICATE_KEY', message: `"${error.path}" is given twice; give each field once.` }]);
    }
    // The reviver (a number written with a fraction) walks the value recursively: thousands of levels
    // overflow the stack before checkParsed could say it is too deep.
    if (error instanceof RangeError) throw tooDeep(undefined, wholeBody);
    throw new ApiError(400, 'malformed_json', 'The request body is not valid JSON.');
  }
}

export const hasBody = (ctx: Context) => {
  const length = ctx.get('content-length');
  return (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
};

const tooLarge = (what: string, limit: number) => new ApiError(413, 'payload_too_large', `${what} is larger than ${limit} bytes.`);

/**
 * A body's text as the one reader of bodies reads it: koa-body, decoding its Content-Encoding (gzip,
 * deflate, br; an unknown one is 415) and counting `limit` on the decoded bytes, so a small compressed
 * body that inflates past it is 413 once that much is read. The text is UTF-8, strictly. Undefined when
 * the media type is none of `textTypes` (koa-body leaves such a body unread). `what` names the body in
 * refusals.
 */
export function bodyText(limit: number, textTypes: string[], what: string) {
  const parse = koaBody({
    json: false,
    urlencoded: false,
    text: true,
    textTypes,
    encoding: 'latin1',
    multipart: false,
    textLimit: limit,
    // koa-body types these as its own enum; the strings are its values.
    parsedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'] as unknown as NonNullable<Parameters<typeof koaBody>[0]>['parsedMethods'],
    onError: (err: Error) => {
      throw err;
    },
  });
  return async (ctx: Context): Promise<string | undefined> => {
    const declared = Number(ctx.get('content-length') || '0');
    if (declared > limit) throw tooLarge(what, limit);
    // Content codings are case-insensitive (RFC 9110 8.4.1); the decompressing reader compares them as written.
    const encoding = ctx.get('content-encoding').trim().toLowerCase();
    if (encoding !== '') ctx.req.headers['content-encoding'] = encoding;
    try {
      await parse(ctx, async () => {});
    } catch (err) {
      const status = (err as { status?: number }).status;
      if (status === 413) throw tooLarge(what, limit);
      // An unknown Content-Encoding (RFC 9110 15.5.16).
      if (status === 415) throw new ApiError(415, 'unsupported_media_type', 'Send the body without Content-Encoding, or with gzip, deflate or br.');
      // Bytes that are not what their Content-Encoding says, or a body cut short.
      throw new ApiError(400, 'malformed_json', encoding === '' || encoding === 'identity' ? `${what} could not be read.` : `${what} could not be decoded as ${encoding}.`);
    }
    if (typeof ctx.request.body !== 'string') return undefined;
    // koa-body read the bytes as latin1: one character per byte, so nothing is lost on the way back.
    return utf8Text(Buffer.from(ctx.request.body, 'latin1'), what);
  };
}

/**
 * Parses a JSON body. With `optional`, an absent body is allowed (rotate-secret) and yields undefined;
 * a body that is present must still be JSON. `wholeBody` is the path of issues about the body as a whole.
 */
export function jsonBody(limit: number, { optional = false, wholeBody = 'body' }: { optional?: boolean; wholeBody?: WholeBody } = {}) {
  const read = bodyText(limit, JSON_TYPES, 'The request body');
  return async (ctx: Context, next: Next) => {
    if (optional && !hasBody(ctx)) {
      ctx.state.body = undefined;
      return next();
    }
    if (!isJson(ctx)) {
      throw unsupportedMediaType();
    }
    const text = await read(ctx);
    // koa-body reads only a media type it can parse: `application/*+json` passes isJson but is none,
    // and its body, left unread, is not an empty one.
    if (text === undefined && hasBody(ctx)) throw unsupportedMediaType();
    const raw = text ?? '';
    if (raw.trim() === '') {
      if (optional) {
        ctx.state.body = undefined;
        return next();
      }
      throw new ApiError(400, 'malformed_json', 'The request body is empty; send a JSON object.');
    }
    const parsed = parseBodyJson(raw, wholeBody);
    checkParsed(parsed, undefined, wholeBody);
    ctx.state.rawBody = raw;
    ctx.state.body = parsed;
    return next();
  };
}
