// sendWebhook against a REAL local HTTPS receiver. The sender runs in a child process started
// with NODE_EXTRA_CA_CERTS=<throwaway CA>, the only way the production code learns to trust it
// (Node reads the variable once at start; send.ts passes no `ca`).
import test from 'ava';
import fc from 'fast-check';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PINNED_TEST_HOSTNAME, createTestPki, startReceiver } from '../helpers/https-receiver.ts';
import type { ProgrammedResponse, Receiver, TestPki } from '../helpers/https-receiver.ts';
import { SNIPPET_MAX_BYTES, sendWebhook, snippetFromBytes, verdictForStatus } from '../../src/webhooks/send.ts';
import type { AttemptResult, Verdict } from '../../src/webhooks/send.ts';
import type { LookupFn, ResolvedAddress } from '../../src/webhooks/destination.ts';
import { dnsResolver, resolveDestination } from '../../src/webhooks/destination.ts';
import { startNameserver } from '../helpers/nameserver.ts';
import { WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER, deliveryHeaders, verifySignature } from '../../src/webhooks/signing.ts';

const run = promisify(execFile);
const FIXTURE = fileURLToPath(new URL('./fixtures/send-once.ts', import.meta.url));
const SECRET = 'cmp_whs_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG';
const EVENT_ID = '0190a0b0-0000-7000-8000-0000000000aa';

let pki: TestPki;
test.before(async () => {
  pki = await createTestPki();
});
test.after.always(async () => {
  await pki?.cleanup();
});

interface ChildInput {
  url: string;
  body?: Buffer;
  headers?: Record<string, string>;
  timeoutMs?: number;
  allowLocal?: boolean;
  lookupSequence?: ResolvedAddress[][];
  trustCa?: boolean;
}

async function sendInChild(input: ChildInput): Promise<{ result: AttemptResult; lookupCalls: number }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  if (input.trustCa ?? true) env.NODE_EXTRA_CA_CERTS = pki.caPath;
  const arg = JSON.stringify({
    url: input.url,
    bodyBase64: (input.body ?? Buffer.from('{}')).toString('base64'),
    headers: input.headers ?? { 'Content-Type': 'application/json' },
    timeoutMs: input.timeoutMs ?? 15_000, // generous: only the timeout case relies on it
    allowLocal: input.allowLocal ?? true,
    lookupSequence: input.lookupSequence,
  });
  const { stdout } = await run(process.execPath, [FIXTURE, arg], { env, timeout: 30_000 });
  return JSON.parse(stdout);
}

async function withReceiver<T>(
  responses: ProgrammedResponse[],
  fn: (r: Receiver) => Promise<T>,
  cert: 'trusted' | 'untrusted' = 'trusted',
): Promise<T> {
  const receiver = await startReceiver({ ...pki[cert], responses });
  try {
    return await fn(receiver);
  } finally {
    await receiver.close();
  }
}

test('200: SUCCESS; the receiver gets the exact bytes and a signature that verifies', async (t) => {
  // Bytes a JSON round-trip would not preserve: odd spacing, escapes, non-ASCII.
  const body = Buffer.from('{"id":"0190a0b0-0000-7000-8000-0000000000aa",  "data":{"x":"\\u00e9 é ☃"}}', 'utf8');
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = deliveryHeaders({ eventId: EVENT_ID, timestamp, attempt: 2, secrets: [SECRET], body });
  await withReceiver([{ status: 200, body: 'ok' }], async (receiver) => {
    const { result } = await sendInChild({ url: `${receiver.origin}/hooks/in?account=7`, body, headers });
    t.like(result, { verdict: 'SUCCESS', statusCode: 200, errorClass: null, responseSnippet: null });
    t.true(Number.isInteger(result.durationMs) && result.durationMs >= 0);
    t.is(receiver.requests.length, 1);
    const [req] = receiver.requests;
    t.is(req.method, 'POST');
    t.is(req.path, '/hooks/in?account=7');
    t.true(req.body.equals(body));
    t.is(req.headers['content-type'], 'application/json');
    t.is(req.headers['service-webhook-id'], EVENT_ID);
    t.is(req.headers['service-webhook-attempt'], '2');
    t.is(req.headers['content-length'], String(body.length));
    t.true(
      verifySignature({
        header: req.headers[WEBHOOK_SIGNATURE_HEADER.toLowerCase()],
        timestamp: req.headers[WEBHOOK_TIMESTAMP_HEADER.toLowerCase()],
        body: req.body,
        secret: SECRET,
      }),
    );
  });
});

test('500: RETRY with the status and a snippet of at most 512 bytes, cut on a character boundary', async (t) => {
  const errorBody = '€'.repeat(400); // 1200 bytes, 3 per character
  await withReceiver([{ status: 500, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: errorBody }], async (receiver) => {
    const { result } = await sendInChild({ url: `${receiver.origin}/hook` });
    t.like(result, { verdict: 'RETRY', statusCode: 500, errorClass: 'HTTP_STATUS' });
    t.true(Buffer.byteLength(result.responseSnippet ?? '', 'utf8') <= SNIPPET_MAX_BYTES);
    t.is(result.responseSnippet, '€'.repeat(170));
  });
});

test('404: PERMANENT with the receiver’s own short body as snippet', async (t) => {
  await withReceiver([{ status: 404, body: 'no such hook' }], async (receiver) => {
    const { result } = await sendInChild({ url: `${receiver.origin}/missing` });
    t.like(result, { verdict: 'PERMANENT', statusCode: 404, responseSnippet: 'no such hook' });
  });
});

test('408 and 429: RETRY', async (t) => {
  await withReceiver([{ status: 408 }, { status: 429, headers: { 'retry-after': '5' } }], async (receiver) => {
    const first = await sendInChild({ url: `${receiver.origin}/hook` });
    const second = await sendInChild({ url: `${receiver.origin}/hook` });
    t.like(first.result, { verdict: 'RETRY', statusCode: 408 });
    t.like(second.result, { verdict: 'RETRY', statusCode: 429 });
  });
});

test('301 with a Location: PERMANENT and the Location is never requested', async (t) => {
  await withReceiver([{ status: 301, headers: { location: '/elsewhere' }, body: 'moved' }, { status: 200 }], async (receiver) => {
    const { result } = await sendInChild({ url: `${receiver.origin}/hook` });
    t.like(result, { verdict: 'PERMANENT', statusCode: 301, errorClass: 'REDIRECT', responseSnippet: 'moved' });
    t.deepEqual(
      receiver.requests.map((r) => r.path),
      ['/hook'],
    );
  });
});

test('a receiver slower than timeoutMs: RETRY TIMEOUT', async (t) => {
  await withReceiver([{ status: 200, hang: true }], async (receiver) => {
    // Long enough for a cold child to finish TLS on a loaded machine, so the request does arrive.
    const { result } = await sendInChild({ url: `${receiver.origin}/slow`, timeoutMs: 3000 });
    t.like(result, { verdict: 'RETRY', statusCode: null, errorClass: 'TIMEOUT', responseSnippet: null });
    t.is(receiver.requests.length, 1);
  });
});

test('a certificate our CA did not sign: RETRY TLS, nothing sent', async (t) => {
  await withReceiver(
    [{ status: 200 }],
    async (receiver) => {
      const { result } = await sendInChild({ url: `${receiver.origin}/hook` });
      t.like(result, { verdict: 'RETRY', statusCode: null, errorClass: 'TLS' });
      t.is(receiver.requests.length, 0);
    },
    'untrusted',
  );
});

test('trust comes from NODE_EXTRA_CA_CERTS: without it the same receiver is a TLS failure', async (t) => {
  await withReceiver([{ status: 200 }], async (receiver) => {
    const { result } = await sendInChild({ url: `${receiver.origin}/hook`, trustCa: false });
    t.like(result, { verdict: 'RETRY', errorClass: 'TLS' });
    t.is(receiver.requests.length, 0);
  });
});

test('without allowLocal the same localhost URL is refused and nothing is sent', async (t) => {
  await withReceiver([{ status: 200 }], async (receiver) => {
    const { result } = await sendInChild({ url: `${receiver.origin}/hook`, allowLocal: false });
    t.like(result, { verdict: 'PERMANENT', statusCode: null, errorClass: 'URL_NOT_PERMITTED' });
    t.is(receiver.requests.length, 0);
  });
  // And at the resolution layer, even on port 443.
  t.like(await resolveDestination('localhost', { allowLocal: false, signal: new AbortController().signal }), { ok: false, kind: 'NOT_PERMITTED' });
});

test('connects to the checked address: a DNS rebinding after the check cannot move the request', async (t) => {
  // PINNED_TEST_HOSTNAME exists only in this injected lookup, which answers 127.0.0.1 once and a
  // private address ever after. Reaching the receiver under that name, with one lookup, shows the
  // connection used the checked answer and TLS verified the original hostname.
  await withReceiver([{ status: 204 }], async (receiver) => {
    const { result, lookupCalls } = await sendInChild({
      url: `https://${PINNED_TEST_HOSTNAME}:${receiver.port}/hook`,
      lookupSequence: [[{ address: '127.0.0.1', family: 4 }], [{ address: '10.0.0.1', family: 4 }]],
    });
    t.like(result, { verdict: 'SUCCESS', statusCode: 204 });
    t.is(lookupCalls, 1);
    t.is(receiver.requests.length, 1);
    t.is(receiver.requests[0].headers.host, `${PINNED_TEST_HOSTNAME}:${receiver.port}`);
  });
});

test('TLS verifies the original hostname, not the pinned address', async (t) => {
  // The certificate names 127.0.0.1 but not this host: pinning to 127.0.0.1 must not make it pass.
  await withReceiver([{ status: 200 }], async (receiver) => {
    const { result } = await sendInChild({
      url: `https://not-in-certificate.webhook-receiver-test.com:${receiver.port}/hook`,
      lookupSequence: [[{ address: '127.0.0.1', family: 4 }]],
    });
    t.like(result, { verdict: 'RETRY', statusCode: null, errorClass: 'TLS' });
    t.regex(result.errorDetail ?? '', /ERR_TLS_CERT_ALTNAME_INVALID/);
    t.is(receiver.requests.length, 0);
  });
});

// In-process cases: these fail before any TLS handshake, so no CA is involved.

const lookupOf = (...addresses: string[]): LookupFn => async () =>
  addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

test('a name that now resolves to a private address: RETRY DESTINATION_NOT_PERMITTED', async (t) => {
  const result = await sendWebhook({
    url: new URL('https://hooks.example.com/in'),
    body: Buffer.from('{}'),
    headers: {},
    allowLocal: false,
    lookup: lookupOf('93.184.215.14', '169.254.169.254'),
  });
  t.like(result, { verdict: 'RETRY', statusCode: null, errorClass: 'DESTINATION_NOT_PERMITTED', responseSnippet: null });
  t.regex(result.errorDetail ?? '', /169\.254\.169\.254/);
});

test('DNS failure: RETRY DNS', async (t) => {
  const result = await sendWebhook({
    url: new URL('https://hooks.example.com/in'),
    body: Buffer.from('{}'),
    headers: {},
    allowLocal: false,
    lookup: async () => {
      throw Object.assign(new Error('getaddrinfo EAI_AGAIN'), { code: 'EAI_AGAIN' });
    },
  });
  t.like(result, { verdict: 'RETRY', errorClass: 'DNS' });
});

test('DNS that never answers is bounded by timeoutMs: RETRY TIMEOUT, and the resolver is told to stop', async (t) => {
  let signal: AbortSignal | undefined;
  const result = await sendWebhook({
    url: new URL('https://hooks.example.com/in'),
    body: Buffer.from('{}'),
    headers: {},
    timeoutMs: 100,
    allowLocal: false,
    lookup: (_host, options) => {
      signal = options.signal;
      return new Promise<ResolvedAddress[]>(() => {});
    },
  });
  t.like(result, { verdict: 'RETRY', errorClass: 'TIMEOUT' });
  t.true(signal?.aborted, 'the lookup was cancelled at the deadline');
});

test('the production resolver against a nameserver that never answers: RETRY TIMEOUT at the deadline; no such name: RETRY DNS', async (t) => {
  const ns = await startNameserver({ 'silent.send-test.com': 'silent' });
  t.teardown(() => ns.close());
  const send = (host: string, timeoutMs: number) =>
    sendWebhook({
      url: new URL(`https://${host}/in`),
      body: Buffer.from('{}'),
      headers: {},
      timeoutMs,
      allowLocal: false,
      lookup: dnsResolver({ servers: [ns.address] }),
    });
  const silent = await send('silent.send-test.com', 300);
  t.like(silent, { verdict: 'RETRY', statusCode: null, errorClass: 'TIMEOUT' });
  // The nameserver's own answer, so it was asked (no deadline in play: on a busy machine the silent
  // name's query may not have left before its 300 ms were up).
  const missing = await send('missing.send-test.com', 30_000);
  t.like(missing, { verdict: 'RETRY', statusCode: null, errorClass: 'DNS' });
  t.regex(missing.errorDetail ?? '', /ENOTFOUND/);
  t.true(ns.queries['missing.send-test.com'] > 0);
});

test('connection refused: RETRY CONNECTION', async (t) => {
  const receiver = await startReceiver({ ...pki.trusted, responses: [{ status: 200 }] });
  const { port } = receiver;
  await receiver.close();
  const result = await sendWebhook({
    url: new URL(`https://localhost:${port}/hook`),
    body: Buffer.from('{}'),
    headers: {},
    allowLocal: true,
    lookup: lookupOf('127.0.0.1'),
  });
  t.like(result, { verdict: 'RETRY', statusCode: null, errorClass: 'CONNECTION' });
});

test('a URL breaking docs/reference/contract.md §6.6 is PERMANENT without any lookup', async (t) => {
  let looked = false;
  const result = await sendWebhook({
    url: new URL('http://hooks.example.com/in'),
    body: Buffer.from('{}'),
    headers: {},
    allowLocal: false,
    lookup: async () => {
      looked = true;
      return [];
    },
  });
  t.like(result, { verdict: 'PERMANENT', errorClass: 'URL_NOT_PERMITTED' });
  t.false(looked);
});

test('verdictForStatus follows docs/reference/contract.md §6.5', (t) => {
  const table: Array<[number, Verdict]> = [
    [200, 'SUCCESS'], [201, 'SUCCESS'], [204, 'SUCCESS'], [299, 'SUCCESS'],
    [300, 'PERMANENT'], [301, 'PERMANENT'], [302, 'PERMANENT'], [307, 'PERMANENT'], [308, 'PERMANENT'],
    [400, 'PERMANENT'], [401, 'PERMANENT'], [403, 'PERMANENT'], [404, 'PERMANENT'], [410, 'PERMANENT'], [499, 'PERMANENT'],
    [408, 'RETRY'], [429, 'RETRY'], [500, 'RETRY'], [502, 'RETRY'], [503, 'RETRY'], [599, 'RETRY'],
  ];
  for (const [status, verdict] of table) t.is(verdictForStatus(status), verdict, String(status));
});

test('property: snippets never exceed 512 UTF-8 bytes and are the longest prefix of valid input that fits', (t) => {
  // size 'max': fast-check's default size keeps these under 40 bytes, never near the limit.
  let cut = 0;
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 700, size: 'max' }), (s) => {
      const bytes = Buffer.from(s, 'utf8');
      const snippet = snippetFromBytes(bytes);
      if (snippet !== s) cut++;
      const next = [...s.slice(snippet.length)][0];
      const longest = snippet === s || Buffer.byteLength(snippet + next, 'utf8') > 512;
      return Buffer.byteLength(snippet, 'utf8') <= 512 && s.startsWith(snippet) && longest && (bytes.length > 512 || snippet === s);
    }),
    { numRuns: 300 },
  );
  t.true(cut > 30, `${cut} snippets were cut`);
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 700, size: 'max' }), (arr) => Buffer.byteLength(snippetFromBytes(Buffer.from(arr)), 'utf8') <= 512),
  );
});
