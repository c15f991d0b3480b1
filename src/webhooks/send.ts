// One webhook delivery attempt: check the destination, POST the signed body, classify the answer
// (docs/reference/contract.md §6.5, §6.6).
//
//   1. Re-check the URL syntax (defence in depth; the endpoint was checked when stored).
//   2. Resolve the host (c-ares, within the attempt's deadline) and check EVERY address
//      (destination.ts) immediately before connecting.
//   3. Connect to exactly those checked addresses: the undici connector gets a `lookup` that
//      answers with them and never asks DNS again, so a DNS rebinding between check and connect
//      cannot move the request. TLS still sends SNI for, and verifies the certificate against,
//      the original hostname (undici sets `servername` from the URL host; Node's
//      checkServerIdentity uses it). A fresh Client per attempt, so nothing pinned is reused.
//   4. No redirect interceptor is composed, so a 3xx is just a response (never followed), and
//      undici's Client does not read proxy environment variables, so nothing bypasses the pin.
//   5. Read at most a few hundred bytes of a non-2xx body for `responseSnippet`, then destroy it.
//
// Trust: no `ca` option is passed, so tls.connect uses Node's default store, which includes
// certificates from NODE_EXTRA_CA_CERTS (read once at process start); the local-receiver test
// proves this for undici's connector by trusting a throwaway CA only through that variable.
import { performance } from 'node:perf_hooks';
import type { LookupFunction } from 'node:net';
import { Client } from 'undici';
import { checkWebhookUrl, resolveDestination } from './destination.ts';
import type { LookupFn, ResolvedAddress } from './destination.ts';

export type Verdict = 'SUCCESS' | 'RETRY' | 'PERMANENT';

export interface AttemptResult {
  verdict: Verdict;
  statusCode: number | null;
  durationMs: number;
  /** Null on success; otherwise one of the ERROR_CLASSES values. */
  errorClass: string | null;
  /** Up to 512 bytes (UTF-8) of the receiver's own non-2xx response body; null for 2xx. */
  responseSnippet: string | null;
  /** For operators' logs: what went wrong, in words. Not part of docs/reference/contract.md's delivery record. */
  errorDetail: string | null;
}

export const ERROR_CLASSES = {
  /** HTTP response with a non-2xx status other than 3xx (the status code says which). */
  HTTP_STATUS: 'HTTP_STATUS',
  /** 3xx response; redirects are never followed. */
  REDIRECT: 'REDIRECT',
  TIMEOUT: 'TIMEOUT',
  DNS: 'DNS',
  TLS: 'TLS',
  CONNECTION: 'CONNECTION',
  NETWORK: 'NETWORK',
  /** The URL itself breaks docs/reference/contract.md §6.6 (cannot change by waiting): permanent. */
  URL_NOT_PERMITTED: 'URL_NOT_PERMITTED',
  /** The name now resolves to an address that is not publicly routable: retried, see below. */
  DESTINATION_NOT_PERMITTED: 'DESTINATION_NOT_PERMITTED',
} as const;

export const DEFAULT_TIMEOUT_MS = 10_000; // docs/reference/decisions.md: delivery request timeout
export const SNIPPET_MAX_BYTES = 512; // docs/reference/contract.md §8
// Enough raw bytes to fill the snippet even when the cut lands inside a multi-byte character.
const READ_LIMIT_BYTES = SNIPPET_MAX_BYTES + 4;

export interface SendInput {
  url: URL;
  body: Buffer;
  headers: Record<string, string>;
  timeoutMs?: number;
  allowLocal: boolean;
  lookup?: LookupFn;
  /** Aborted when the process stops: the attempt is cut short and answered ABANDONED. */
  stopping?: AbortSignal;
}

/** Not one of ERROR_CLASSES: the process stopped mid-attempt, which says nothing of the receiver (deliver.ts records nothing). */
export const ABANDONED = 'ABANDONED';

/** The verdict for an HTTP status, docs/reference/contract.md §6.5. */
export function verdictForStatus(status: number): Verdict {
  if (status >= 200 && status <= 299) return 'SUCCESS';
  if (status >= 300 && status <= 399) return 'PERMANENT';
  if (status === 408 || status === 429) return 'RETRY';
  if (status >= 400 && status <= 499) return 'PERMANENT';
  // 5xx, and anything non-standard, is the receiver's trouble: try again later.
  return 'RETRY';
}

/**
 * Decodes at most SNIPPET_MAX_BYTES of UTF-8 text from `bytes`, never cutting a character in two,
 * and never exceeding the limit after re-encoding (invalid bytes become U+FFFD, 3 bytes each).
 */
export function snippetFromBytes(bytes: Buffer, maxBytes = SNIPPET_MAX_BYTES): string {
  const text = bytes.subarray(0, maxBytes + 4).toString('utf8');
  let out = '';
  let used = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch, 'utf8');
    if (used + size > maxBytes) break;
    out += ch;
    used += size;
  }
  // A character cut by the read limit can only decode to U+FFFD beyond byte maxBytes: decoding
  // never shrinks the byte count, so the loop above has stopped before reaching it.
  return out;
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA', 'ENODATA', 'ESERVFAIL']);
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN',
  'EPIPE', 'EADDRNOTAVAIL', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED',
]);
// OpenSSL verification codes (X509_V_ERR_* names as Node exposes them) and Node's TLS codes.
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|EPROTO$)|CERT|SELF_SIGNED|UNABLE_TO_|CHAIN|LEAF_SIGNATURE|ISSUER|CRL|HOSTNAME_MISMATCH/;

function errorCodes(err: unknown): string[] {
  const codes: string[] = [];
  let current: unknown = err;
  for (let depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    const nested = (current as { errors?: unknown }).errors; // AggregateError from happy eyeballs
    if (Array.isArray(nested)) for (const e of nested) codes.push(...errorCodes(e));
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

function classifyError(err: unknown): string {
  const codes = errorCodes(err);
  if (codes.some((c) => TIMEOUT_CODES.has(c))) return ERROR_CLASSES.TIMEOUT;
  if (codes.some((c) => TLS_CODE.test(c))) return ERROR_CLASSES.TLS;
  if (codes.some((c) => DNS_CODES.has(c))) return ERROR_CLASSES.DNS;
  if (codes.some((c) => CONNECTION_CODES.has(c))) return ERROR_CLASSES.CONNECTION;
  return ERROR_CLASSES.NETWORK;
}

const describe = (err: unknown): string => {
  const codes = errorCodes(err);
  const message = err instanceof Error ? err.message : String(err);
  return codes.length > 0 ? `${codes[0]}: ${message}` : message;
};

// Node's net.connect calls `lookup(host, {all: true, ...})` when it will race address families
// (autoSelectFamily, on by default) and `lookup(host, {...})` otherwise; answer both from the
// checked list and refuse any other name.
function pinnedLookup(expectedHost: string, addresses: ResolvedAddress[]): LookupFunction {
  return (hostname, options, callback) => {
    if (hostname.toLowerCase() !== expectedHost) {
      const err: NodeJS.ErrnoException = new Error(`refusing to resolve ${hostname}: not the checked destination`);
      err.code = 'ENOTFOUND';
      callback(err, '', 0);
      return;
    }
    if (options.all) callback(null, addresses.map(({ address, family }) => ({ address, family })));
    else callback(null, addresses[0].address, addresses[0].family);
  };
}

/** Reads up to `limit` bytes into `chunks` (the caller's: what arrived before a failure is kept there). */
async function readBounded(body: AsyncIterable<Buffer | Uint8Array>, limit: number, chunks: Buffer[] = []): Promise<Buffer> {
  let total = 0;
  for await (const chunk of body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    chunks.push(buf);
    total += buf.length;
    if (total >= limit) break; // leaving the loop destroys the stream
  }
  return Buffer.concat(chunks).subarray(0, limit);
}

/**
 * Makes one delivery attempt and returns its verdict (docs/reference/contract.md §6.5). Never throws for anything the
 * network or the receiver does.
 */
export async function sendWebhook(input: SendInput): Promise<AttemptResult> {
  const { url, body, headers, allowLocal } = input;
  const timeoutMs = input.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const started = performance.now();
  const elapsed = () => Math.max(0, Math.round(performance.now() - started));
  const remaining = () => Math.max(1, Math.ceil(timeoutMs - (performance.now() - started)));
  const result = (
    verdict: Verdict,
    fields: Partial<Omit<AttemptResult, 'verdict' | 'durationMs'>>,
  ): AttemptResult => ({
    verdict,
    statusCode: fields.statusCode ?? null,
    durationMs: elapsed(),
    errorClass: fields.errorClass ?? null,
    responseSnippet: fields.responseSnippet ?? null,
    errorDetail: fields.errorDetail ?? null,
  });

  // Step 1.
  const checked = checkWebhookUrl(url.href, { allowLocal });
  if (!checked.ok) {
    return result('PERMANENT', { errorClass: ERROR_CLASSES.URL_NOT_PERMITTED, errorDetail: checked.reason });
  }
  const target = checked.url;
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();

  let timedOut = false;
  const controller = new AbortController();
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('webhook delivery timed out'));
  }, timeoutMs);
  const signal = input.stopping ? AbortSignal.any([controller.signal, input.stopping]) : controller.signal;
  const abandoned = () => !timedOut && input.stopping?.aborted === true;
  const abandonedResult = () => result('RETRY', { errorClass: ABANDONED, errorDetail: 'the process stopped before the receiver answered' });

  // Step 2, bounded by the same deadline: at the deadline resolveDestination gives up and the
  // resolver's queries are cancelled, so a name whose nameservers never answer holds nothing after.
  let resolved: Awaited<ReturnType<typeof resolveDestination>>;
  try {
    resolved = await resolveDestination(target.hostname, { allowLocal, lookup: input.lookup, signal });
  } catch (err) {
    clearTimeout(timer);
    if (abandoned()) return abandonedResult();
    if (!timedOut) throw err; // resolveDestination reports DNS trouble as a value: this is a bug
    return result('RETRY', { errorClass: ERROR_CLASSES.TIMEOUT, errorDetail: `resolving ${host} timed out` });
  }
  if (!resolved.ok) {
    clearTimeout(timer);
    // A name that now resolves to a forbidden address is RETRY, not PERMANENT: nothing was sent,
    // so retrying costs one DNS query per attempt and leaks nothing, while DNS answers do change
    // (a migration, split-horizon slip, or a briefly wrong record) and docs/reference/contract.md §6.5 treats DNS
    // trouble as retryable. A hostile endpoint gains nothing from the retries; its failures show
    // in lastErrorClass and consecutiveFailures.
    if (resolved.kind === 'DNS') return result('RETRY', { errorClass: ERROR_CLASSES.DNS, errorDetail: resolved.reason });
    return result('RETRY', { errorClass: ERROR_CLASSES.DESTINATION_NOT_PERMITTED, errorDetail: resolved.reason });
  }

  // Step 3.
  const client = new Client(target.origin, {
    connect: {
      lookup: pinnedLookup(host, resolved.addresses),
      timeout: remaining(),
      maxCachedSessions: 0,
    },
    headersTimeout: remaining(),
    bodyTimeout: remaining(),
    pipelining: 1,
  });

  try {
    const requestHeaders: Record<string, string> = { 'User-Agent': 'spend-control-webhooks/1', ...headers };
    const response = await client.request({
      method: 'POST',
      path: `${target.pathname}${target.search}`,
      headers: requestHeaders,
      body,
      signal,
    });
    // Destroying an unread body emits 'error' (UND_ERR_ABORTED); it is expected, not a failure.
    response.body.on('error', () => undefined);
    const statusCode = response.statusCode;
    const verdict = verdictForStatus(statusCode);
    if (verdict === 'SUCCESS') {
      response.body.destroy();
      return result('SUCCESS', { statusCode });
    }
    // Step 5: a body that stalls or errors still leaves us the status code.
    let snippet = '';
    const read: Buffer[] = [];
    try {
      snippet = snippetFromBytes(await readBounded(response.body, READ_LIMIT_BYTES, read));
    } catch {
      // The deadline or the connection ended the body: what came of it still tells the operator something.
      snippet = snippetFromBytes(Buffer.concat(read));
    } finally {
      response.body.destroy();
    }
    const isRedirect = statusCode >= 300 && statusCode <= 399;
    const location = response.headers.location;
    return result(verdict, {
      statusCode,
      errorClass: isRedirect ? ERROR_CLASSES.REDIRECT : ERROR_CLASSES.HTTP_STATUS,
      responseSnippet: snippet,
      errorDetail: isRedirect
        ? `redirect not followed${typeof location === 'string' ? ` (Location: ${location.slice(0, 200)})` : ''}`
        : `receiver answered ${statusCode}`,
    });
  } catch (err) {
    if (abandoned()) return abandonedResult();
    const errorClass = timedOut ? ERROR_CLASSES.TIMEOUT : classifyError(err);
    return result('RETRY', { errorClass, errorDetail: timedOut ? `no answer within ${timeoutMs} ms` : describe(err) });
  } finally {
    clearTimeout(timer);
    await client.destroy().catch(() => undefined);
  }
}
