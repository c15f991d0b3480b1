// The operational surface through real HTTP: probes, Prometheus metrics behind METRICS_TOKEN, and
// Server-Timing on decision responses.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { purchase, shopManifest } from '../helpers/shop.ts';
import { READY_DEADLINE_MS } from '../../src/http/health.ts';
import { newLifecycle } from '../../src/lifecycle.ts';
import { expireApproval } from '../../src/approvals/close.ts';
import { runCommand } from '../../src/commands/run-command.ts';
import { VersionConflict } from '../../src/http/errors.ts';
import { configureWebhooks } from '../../src/webhooks/runtime.ts';
import { attemptDelivery } from '../../src/webhooks/deliver.ts';
import type { AttemptResult } from '../../src/webhooks/send.ts';
import { randomBytes } from 'node:crypto';

const METRICS_TOKEN = 'metrics-token-0123456789';
let app: TestApp;
test.before(async () => {
  app = await startApp({ env: { METRICS_TOKEN } });
});
test.after.always(() => app?.close());

const scrape = () => app.request('/metrics', { key: METRICS_TOKEN });
const sample = (text: string, name: string, labels: Record<string, string> = {}): number => {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(name) && (l[name.length] === ' ' || l[name.length] === '{') && wanted.every((w) => l.includes(w)));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
};

test('/health/live and /health still answer; /health/ready checks the store', async (t) => {
  t.deepEqual((await app.request('/health/live')).body, { status: 'ok' });
  t.deepEqual((await app.request('/health')).body, { status: 'ok', store: app.store.engine });
  const ready = await app.request('/health/ready');
  t.is(ready.status, 200);
  t.like(ready.body, { status: 'ready', store: { engine: app.store.engine, ok: true }, jobs: { ok: true, where: 'another process' } });
});

test.serial('/health/ready is 503 while the jobs this process should run are not running, and while stopping', async (t) => {
  app.deps.lifecycle = newLifecycle(true);
  try {
    const res = await app.request('/health/ready');
    t.is(res.status, 503);
    t.like(res.body, { status: 'unavailable', jobs: { ok: false, where: 'this process' } });
    app.deps.lifecycle.jobsRunning = true;
    t.is((await app.request('/health/ready')).status, 200);
    app.deps.lifecycle.stopping = true;
    t.like((await app.request('/health/ready')).body, { status: 'stopping' });
  } finally {
    delete app.deps.lifecycle;
  }
});

test.serial('/health/ready is 503 when the store does not answer within the deadline; /health/live still answers', async (t) => {
  const db = app.deps.store.db;
  const collection = db.collection.bind(db);
  // A store that hangs: every read of every collection never returns, so neither does the probe's round trip.
  (db as { collection: unknown }).collection = () => ({ findOne: () => new Promise(() => {}) });
  try {
    const res = await app.request('/health/ready');
    t.is(res.status, 503);
    t.like(res.body, { status: 'unavailable', store: { ok: false, error: `no answer within ${READY_DEADLINE_MS} ms` } });
    t.is((await app.request('/health/live')).status, 200);
  } finally {
    (db as { collection: unknown }).collection = collection;
  }
});

test('/metrics needs METRICS_TOKEN and is off without one', async (t) => {
  t.is((await app.request('/metrics')).status, 401);
  t.is((await app.request('/metrics', { key: 'metrics-token-wrong-one' })).status, 401);
  const off = await startApp();
  try {
    t.is((await off.request('/metrics', { key: METRICS_TOKEN })).status, 404);
  } finally {
    await off.close();
  }
});

test.serial('/metrics counts requests by route and status, decisions by outcome and reason, pending approvals', async (t) => {
  const shop = await applyManifest(app, shopManifest('metrics'));
  const before = (await scrape()).text;
  const key = shop.keys['a-key'];
  t.is((await app.request('/v1/purchase-requests', { key, body: purchase(1000) })).status, 201);
  t.is((await app.request('/v1/purchase-requests', { key, body: purchase(30000) })).status, 201);
  t.is((await app.request('/v1/purchase-requests', { key, body: purchase(100, 'Shady Goods Ltd') })).status, 201);
  t.is((await app.request(`/v1/purchase-requests/not-a-uuid`, { key })).status, 404);

  const res = await scrape();
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const after = res.text;
  const delta = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
  t.is(delta('spend_http_requests_total', { method: 'POST', route: '/v1/purchase-requests', status: '201' }), 3);
  t.is(delta('spend_http_requests_total', { method: 'GET', route: '/v1/purchase-requests/:purchaseRequestId', status: '404' }), 1);
  t.is(delta('spend_http_request_duration_seconds_count', { method: 'POST', route: '/v1/purchase-requests', status: '201' }), 3);
  t.is(delta('spend_decisions_total', { outcome: 'APPROVED', kind: 'INITIAL' }), 1);
  t.is(delta('spend_decisions_total', { outcome: 'REQUIRES_APPROVAL', kind: 'INITIAL' }), 1);
  t.is(delta('spend_decision_reasons_total', { outcome: 'REJECTED', reason_code: 'MERCHANT_BLOCKED' }), 1);
  t.is(delta('spend_decision_reasons_total', { outcome: 'REQUIRES_APPROVAL', reason_code: 'APPROVAL_THRESHOLD_EXCEEDED' }), 1);
  t.true(sample(after, 'spend_approvals_pending') >= 1);
  for (const name of ['spend_approvals_expired_total', 'spend_webhook_delivery_attempts_total', 'spend_store_transaction_retries_total', 'spend_store_version_conflicts_total', 'spend_job_lag_seconds', 'spend_process_cpu_seconds_total']) {
    t.true(after.includes(`# TYPE ${name}`), name);
  }
});

test.serial('/metrics labels an operator call refused for its token by its route, not by the token check\'s prefix pattern', async (t) => {
  const before = (await scrape()).text;
  t.is((await app.request('/admin/manifests', { key: 'not-the-operator-token-0123', body: {} })).status, 401);
  t.is((await app.request('/admin/oauth-clients', { key: 'not-the-operator-token-0123' })).status, 401);
  const after = (await scrape()).text;
  const delta = (labels: Record<string, string>) => sample(after, 'spend_http_requests_total', labels) - sample(before, 'spend_http_requests_total', labels);
  t.is(delta({ method: 'POST', route: '/admin/manifests', status: '401' }), 1);
  t.is(delta({ method: 'GET', route: '/admin/oauth-clients', status: '401' }), 1);
  // The token check is the operator router's own middleware: its prefix pattern is no route template.
  t.false(after.includes('route="/admin(?:'), 'no regular expression as a route label');
});

test.serial('/metrics counts answers, expiries with their lag, and store conflicts and retries', async (t) => {
  let clock = new Date();
  const timed = await startApp({ env: { METRICS_TOKEN }, now: () => clock });
  try {
    const shop = await applyManifest(timed, shopManifest('expiry'));
    const before = (await timed.request('/metrics', { key: METRICS_TOKEN })).text;
    const held = async () => (await timed.request('/v1/purchase-requests', { key: shop.keys['a-key'], body: purchase(30000) })).body.purchaseRequest.id as string;
    const answered = await held();
    t.is((await timed.admin(`/admin/purchase-requests/${answered}/answer`, { body: { answer: 'APPROVE', person: 'ana' } })).status, 200);
    const expiring = await held();
    const approval = await timed.store.db.collection('approvals').findOne({ purchaseId: expiring });
    clock = new Date(approval!.expiresAt.getTime() + 90_000);
    t.true(await expireApproval(timed.deps, String(approval!._id)));
    let attempts = 0;
    await runCommand(timed.store, async () => {
      if (attempts++ === 0) throw new VersionConflict('a test document');
    });

    const after = (await timed.request('/metrics', { key: METRICS_TOKEN })).text;
    const delta = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
    t.is(delta('spend_decisions_total', { outcome: 'APPROVED', kind: 'APPROVAL_REEVALUATION' }), 1);
    t.is(delta('spend_decisions_total', { outcome: 'REJECTED', kind: 'APPROVAL_EXPIRED' }), 1);
    t.is(delta('spend_approvals_expired_total'), 1);
    t.is(delta('spend_job_lag_seconds_count', { job: 'approvals.expire' }), 1);
    t.is(delta('spend_job_lag_seconds_sum', { job: 'approvals.expire' }), 90);
    t.is(delta('spend_store_version_conflicts_total'), 1);
    t.true(delta('spend_store_transaction_retries_total') >= 1);
  } finally {
    await timed.close();
  }
});

test.serial('/metrics counts webhook delivery attempts by result and attempt number', async (t) => {
  let clock = new Date();
  const hooks = await startApp({ env: { METRICS_TOKEN, WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex') }, now: () => clock });
  try {
    const answers: AttemptResult[] = [
      { verdict: 'RETRY', statusCode: 503, durationMs: 5, errorClass: 'HTTP_STATUS', responseSnippet: 'busy', errorDetail: null },
      { verdict: 'SUCCESS', statusCode: 200, durationMs: 5, errorClass: null, responseSnippet: null, errorDetail: null },
    ];
    configureWebhooks(hooks.deps, { lookup: async () => [{ address: '93.184.215.14', family: 4 }], send: async () => answers.shift()! });
    const shop = await applyManifest(hooks, shopManifest('hooks'));
    const org = shop.keys['org-key'];
    const endpoint = await hooks.request('/v1/webhooks', { key: org, body: { url: 'https://hooks.example.com/in', subscribedTypes: ['purchase.approved'] } });
    const queued = await hooks.request(`/v1/webhooks/${endpoint.body.id}/test`, { key: org, method: 'POST' });
    const before = (await hooks.request('/metrics', { key: METRICS_TOKEN })).text;
    const first = await attemptDelivery(hooks.deps, queued.body.deliveryId);
    t.like(first, { kind: 'ATTEMPTED', status: 'PENDING' });
    clock = new Date((first as { nextAttemptAt: Date }).nextAttemptAt.getTime() + 1000);
    t.like(await attemptDelivery(hooks.deps, queued.body.deliveryId), { kind: 'ATTEMPTED', status: 'DELIVERED' });

    const after = (await hooks.request('/metrics', { key: METRICS_TOKEN })).text;
    const delta = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
    t.is(delta('spend_webhook_delivery_attempts_total', { result: 'retry', attempt: '1' }), 1);
    t.is(delta('spend_webhook_delivery_attempts_total', { result: 'delivered', attempt: '2' }), 1);
    t.is(delta('spend_job_lag_seconds_count', { job: 'webhooks.attempt' }), 2);
  } finally {
    await hooks.close();
  }
});

test('decision responses carry Server-Timing with engine, store and total; other responses do not', async (t) => {
  const shop = await applyManifest(app, shopManifest('timing'));
  const entries = (header: string | null) => Object.fromEntries((header ?? '').split(',').map((e) => {
    const [name, ...params] = e.trim().split(';');
    return [name, Number(params.find((p) => p.startsWith('dur='))?.slice(4))];
  }));
  for (const [path, key, body] of [
    ['/v1/purchase-requests', shop.keys['a-key'], purchase(1000)],
    ['/v1/simulations/current-policies', shop.keys['a-key'], purchase(1000)],
    ['/v1/simulations/policy-version', shop.keys['org-key'], { ...purchase(1000), policyVersionId: shop.policies.main.activeVersionId }],
  ] as const) {
    const res = await app.request(path, { key, body });
    t.true(res.status === 200 || res.status === 201, res.text);
    const timing = entries(res.headers.get('server-timing'));
    t.deepEqual(Object.keys(timing), ['engine', 'store', 'total'], path);
    t.true(Object.values(timing).every((ms) => Number.isFinite(ms) && ms >= 0), path);
    t.true(timing.total >= timing.engine, path);
  }
  t.is((await app.request('/v1/agents', { key: shop.keys['org-key'] })).headers.get('server-timing'), null);
  t.is((await app.request('/v1/purchase-requests', { key: shop.keys['a-key'], body: { merchant: 1 } })).headers.get('server-timing'), null);
});
