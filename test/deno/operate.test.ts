// What an operator runs in production, under Deno (docs/operate/deployment.md, "Under Deno"), on one
// file-backed DATA_DIR: a web process without jobs beside a worker process, the operator CLI, a decision
// whose receipt verifies, the embedded store's wire-protocol listener (the official driver, from Node),
// an OAuth + MCP exchange (the official MCP SDK client, from Node), webhooks signed by the worker and
// received over HTTPS, approvers' email through an SMTP relay, approval expiry, SIGTERM, then
// `npm start`-style (web with jobs) on the same DATA_DIR, which reads back what was acknowledged. The
// processes are reused across the checks: each Deno start costs seconds.
import test, { type ExecutionContext } from 'ava';
import { execFile } from 'node:child_process';
import { createHmac, createPublicKey, timingSafeEqual, verify } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { acmeManifest } from '../helpers/fixtures.ts';
import { createTestPki, startReceiver, type Receiver, type RecordedRequest, type TestPki } from '../helpers/https-receiver.ts';
import { listeningPort, spawnWatched, type WatchedProcess } from '../helpers/service-process.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import type { TestApp } from '../helpers/app.ts';
import { hiddenField, PASSWORD, signInToConsent, type Org } from '../oauth/helpers.ts';

const DENO = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOKEN = 'deno-admin-token-0123456789abcdef';

const startDeno = (t: ExecutionContext, file: string, env: Record<string, string>): WatchedProcess => spawnWatched(t, DENO, ['run', '--allow-all', file], env);

async function until<T>(what: string, p: WatchedProcess, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline || p.child.exitCode !== null) throw new Error(`${what}: not reached (exit ${p.child.exitCode}):\n${p.output()}`);
    await sleep(200);
  }
}

/** A web process under Deno; resolves once /health answers. */
async function startWeb(t: ExecutionContext, env: Record<string, string>) {
  const p = startDeno(t, 'src/main.ts', { ...env, PORT: '0' });
  const port = await until('listening', p, async () => listeningPort(p.output()));
  const url = `http://localhost:${port}`;
  await until('/health', p, async () => ((await fetch(`${url}/health`)).ok ? true : undefined));
  return { ...p, url };
}

async function stop(p: WatchedProcess): Promise<number | null> {
  p.child.kill('SIGTERM');
  return p.exited;
}

/** The operator CLI under Deno; standard input from `input`. */
function cli(env: Record<string, string>, args: string[], input = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(DENO, ['run', '--allow-all', 'scripts/admin.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(input);
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

/** docs/integrate/webhooks.md's receiver check, written from the page. */
function signedBy(request: RecordedRequest, secret: string): boolean {
  const timestamp = String(request.headers['service-webhook-timestamp'] ?? '');
  const expected = Buffer.from(createHmac('sha256', secret).update(`v1:${timestamp}:`).update(request.body).digest('base64url'));
  return String(request.headers['service-webhook-signature'] ?? '')
    .split(',')
    .some((entry) => {
      const [version, signature = ''] = entry.trim().split('=', 2);
      const given = Buffer.from(signature);
      return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

/** What an assistant keeps between runs, in memory; the SDK drives it (Dynamic Client Registration). */
class MemoryProvider implements OAuthClientProvider {
  readonly redirectUrl = 'http://127.0.0.1:53682/callback';
  authorizationUrl: URL | undefined;
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Deno check', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation = () => this.#client;
  saveClientInformation = (info: OAuthClientInformationMixed) => void (this.#client = info);
  tokens = () => this.#tokens;
  saveTokens = (tokens: OAuthTokens) => void (this.#tokens = tokens);
  redirectToAuthorization = (url: URL) => void (this.authorizationUrl = url);
  saveCodeVerifier = (verifier: string) => void (this.#verifier = verifier);
  codeVerifier = () => this.#verifier;
}

const eventsOf = (receiver: Receiver) => receiver.requests.map((r) => JSON.parse(r.body.toString()) as { type: string; data: any });

let pki: TestPki;
let receiver: Receiver;
let smtp: TestSmtp;
test.before(async () => {
  // As docs/operate/deployment.md says: with an empty module cache (a fresh clone), Deno 2.9's first
  // start stalled while loading npm packages in about 4 of 10 trials; filled first, 10 of 10 started.
  await promisify(execFile)(DENO, ['cache', 'src/main.ts', 'src/worker/main.ts', 'scripts/admin.ts'], { cwd: ROOT, timeout: 300_000 });
  pki = await createTestPki();
  receiver = await startReceiver({ ...pki.trusted, responses: [{ status: 204 }] });
  smtp = await startSmtp();
});
test.after.always(async () => {
  await smtp?.close();
  await receiver?.close();
  await pki?.cleanup();
});

test('under Deno: web and worker, the CLI, the wire listener, OAuth + MCP, webhooks, expiry, SIGTERM and a restart on the same DATA_DIR', async (t) => {
  const temp = mkdtempSync(join(tmpdir(), 'deno-operate-'));
  t.teardown(() => rmSync(temp, { recursive: true, force: true }));
  const env = {
    DATA_DIR: join(temp, 'data'),
    ADMIN_TOKEN: TOKEN,
    LOG_LEVEL: 'info',
    EMBEDDED_MONGO_PORT: String(await freePort()),
    WEBHOOK_UNSAFE_ALLOW_LOCAL: '1',
    // How a deployment trusts the receivers' CA (src/webhooks/send.ts); the test CA stands in for it.
    NODE_EXTRA_CA_CERTS: pki.caPath,
    SMTP_URL: smtp.url,
    SMTP_FROM: 'spend@deno.example',
  };

  // ---- The Procfile on the embedded store: web without jobs, and the worker. ----
  const web = await startWeb(t, { ...env, RUN_JOBS: '0' });
  const worker = startDeno(t, 'src/worker/main.ts', env);
  await until('the worker', worker, async () => (worker.output().includes('"msg":"jobs started"') ? true : undefined));
  const operator = { ...env, SERVICE_URL: web.url };

  // The operator CLI applies a manifest from a file (and again below, for approvals that expire in 2 s).
  const manifest = acmeManifest('deno');
  const manifestFile = join(temp, 'manifest.json');
  writeFileSync(manifestFile, JSON.stringify(manifest));
  const applied = await cli(operator, ['apply', manifestFile]);
  t.is(applied.code, 0, applied.stderr);
  const result = JSON.parse(applied.stdout);
  const adminKey: string = result.apiKeys['admin-key'].key;
  const buyerKey: string = result.apiKeys['buyer-key'].key;
  const api = (path: string, key: string, body?: unknown) =>
    fetch(`${web.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

  // ---- A decision, whose receipt, signed under Deno's node:crypto, verifies with Node's against the JWKS. ----
  const agents = await api('/v1/agents', adminKey);
  t.is(agents.body.agents?.length, 2);
  const decided = await fetch(`${web.url}/v1/purchase-requests`, {
    method: 'POST',
    headers: { authorization: `Bearer ${buyerKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ merchant: 'Paper Co', amountMinor: '1999', reason: 'paper' }),
  });
  const decidedBody = (await decided.json()) as any;
  const { decision } = decidedBody;
  const paperId: string = decidedBody.purchaseRequest.id;
  t.deepEqual([decided.status, decision.outcome, decision.reasonCodes], [201, 'APPROVED', ['WITHIN_POLICY']]);
  const jwks = (await fetch(`${web.url}/.well-known/jwks.json`).then((r) => r.json())) as { keys: { kid: string }[] };
  const [header, payload, signature] = (decided.headers.get('decision-receipt') ?? '').split('.');
  const jwk = jwks.keys.find((k) => k.kid === JSON.parse(Buffer.from(header, 'base64url').toString()).kid);
  t.truthy(jwk, 'the receipt names a key of the JWKS');
  t.true(verify(null, Buffer.from(`${header}.${payload}`), createPublicKey({ key: jwk as never, format: 'jwk' }), Buffer.from(signature, 'base64url')));
  t.is(JSON.parse(Buffer.from(payload, 'base64url').toString()).decisionId, decision.id);
  t.true(existsSync(join(env.DATA_DIR, 'spend-control.db')), 'the store lives in DATA_DIR');

  // ---- Webhooks: signed by the worker under Deno, received over HTTPS. ----
  const hook = await api('/v1/webhooks', adminKey, { url: `${receiver.origin}/hook`, subscribedTypes: ['purchase.approval_required', 'purchase.approved', 'purchase.approval_expired'] });
  t.is(hook.status, 201, JSON.stringify(hook.body));
  const secret: string = hook.body.secret;
  const toApprove = await api('/v1/purchase-requests', buyerKey, { merchant: 'Desk Co', amountMinor: '30000', reason: 'desk' });
  t.is(toApprove.status, 201);
  t.is(toApprove.body.decision.outcome, 'REQUIRES_APPROVAL');
  const approvedId: string = toApprove.body.purchaseRequest.id;
  // The approver is emailed through the relay, by the worker.
  const mails = await smtp.until((received) => received.length > 0, 30);
  t.deepEqual(mails[0]?.to, ['ana@deno.example'], 'the approver was emailed');
  const answered = await cli(operator, ['answer', approvedId, 'approve', '--person', 'ana']);
  t.is(answered.code, 0, answered.stderr + answered.stdout);
  writeFileSync(manifestFile, JSON.stringify({ ...manifest, organization: { ...manifest.organization, approvalTtl: 'PT2S' } }));
  const shortened = await cli(operator, ['apply', manifestFile]);
  t.is(shortened.code, 0, shortened.stderr);
  const toExpire = await api('/v1/purchase-requests', buyerKey, { merchant: 'Chair Co', amountMinor: '30000', reason: 'chair' });
  const expiredId: string = toExpire.body.purchaseRequest.id;
  await until('the webhooks', worker, async () => {
    const types = eventsOf(receiver).map((e) => e.type);
    return ['purchase.approved', 'purchase.approval_expired'].every((type) => types.includes(type)) ? true : undefined;
  });
  t.true(receiver.requests.every((r) => signedBy(r, secret)), 'every delivery verifies with the endpoint secret');
  const expired = eventsOf(receiver).filter((e) => e.type === 'purchase.approval_expired');
  t.is(expired.length, 1);
  t.true(JSON.stringify(expired[0].data).includes(expiredId), JSON.stringify(expired[0]));

  // ---- The wire-protocol listener: a connection string from the CLI, the official driver from Node. ----
  const mongoUrl = await cli(operator, ['mongo-url']);
  t.is(mongoUrl.code, 0, mongoUrl.stderr);
  const mongo = new MongoClient(mongoUrl.stdout.trim().split('\n').at(-1)!);
  try {
    const purchases = await mongo.db().collection('purchases').find({}, { projection: { _id: 1, state: 1 } }).toArray();
    t.is(purchases.length, 3);
  } finally {
    await mongo.close();
  }

  // ---- OAuth + MCP: a person's password set through the CLI, the SDK client from Node. ----
  const personId: string = result.people.ana.id;
  const password = await cli(operator, ['set-password', personId], `${PASSWORD}\n`);
  t.is(password.code, 0, password.stderr);
  const org = { personId, email: 'ana@deno.example' } as Org;
  const provider = new MemoryProvider();
  const endpoint = new URL(`${web.url}/mcp`);
  // The first request is a 401: the SDK discovers, registers (DCR) and hands the person a URL.
  await t.throwsAsync(new Client({ name: 'deno-check', version: '1.0.0' }).connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider })), { instanceOf: UnauthorizedError });
  const { browser, consentHtml } = await signInToConsent({ url: web.url } as TestApp, org, provider.authorizationUrl!.href);
  const allowed = await browser.post(`${web.url}/oauth/consent`, { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), agent: result.agents.buyer.id, decision: 'approve' });
  t.is(allowed.status, 303);
  const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  await transport.finishAuth(new URL(allowed.headers.get('location')!).searchParams.get('code')!);
  const mcp = new Client({ name: 'deno-check', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider }));
  const checked = (await mcp.callTool({ name: 'check_purchase', arguments: { merchant: 'Paper Co', amountMinor: '1999', reason: 'paper' } })) as { structuredContent: any };
  t.is(checked.structuredContent.simulatedDecision.outcome, 'APPROVED');
  await mcp.close();

  // ---- SIGTERM: both drain and exit 0. ----
  t.is(await stop(worker), 0, worker.output());
  t.is(await stop(web), 0, web.output());

  // ---- `npm start`: web with the jobs, on the same DATA_DIR, reads back what was acknowledged. ----
  const again = await startWeb(t, env);
  const read = (id: string) => fetch(`${again.url}/v1/purchase-requests/${id}`, { headers: { authorization: `Bearer ${buyerKey}` } }).then((r) => r.json() as Promise<any>);
  t.is((await read(approvedId)).purchase.status, 'APPROVED');
  t.is((await read(expiredId)).purchase.status, 'EXPIRED');
  t.is((await read(paperId)).purchase.status, 'APPROVED');
  t.is(await stop(again), 0, again.output());
});

test('under Deno: WEB_CONCURRENCY above 1 is refused at start, as node:cluster does not run whole there', async (t) => {
  const temp = mkdtempSync(join(tmpdir(), 'deno-cluster-'));
  t.teardown(() => rmSync(temp, { recursive: true, force: true }));
  const p = startDeno(t, 'src/main.ts', { DATA_DIR: join(temp, 'data'), ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'info', PORT: '0', WEB_CONCURRENCY: '2' });
  // Before: the web processes started and listened, without their WAL checkpointer, and hung on SIGTERM.
  const outcome = await Promise.race([p.exited, until('listening', p, async () => (listeningPort(p.output()) ? 'listening' : undefined)).catch(() => 'exited')]);
  t.is(outcome === 'listening' ? 'listening' : await p.exited, 2, p.output());
  t.regex(p.output(), /WEB_CONCURRENCY=2 needs node:cluster, which this runtime \(Deno [\d.]+\) does not run whole/);
});
