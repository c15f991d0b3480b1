// The embedded default keeps every acknowledged write: real service processes on one DATA_DIR,
// stopped with SIGTERM or killed with SIGKILL and started again, and two processes at once.
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { acmeManifest } from '../helpers/fixtures.ts';
import { dayOf, windowsOf } from '../helpers/windows.ts';
import { startService, tempDataDir, type ApiResponse, type ServiceProcess } from '../helpers/service-process.ts';

function budgetManifest(handle: string, limitMinor: number, approvalTtl = 'PT24H') {
  return {
    organization: { handle, name: 'Durable budget', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl },
    people: [{ handle: 'ana', name: 'Ana Approver', email: `ana@${handle}.example` }],
    agents: [{ handle: 'x', name: 'X' }],
    policies: [
      {
        handle: 'daily',
        name: 'One daily budget',
        scope: 'ORGANIZATION',
        currencies: ['EUR'],
        rules: [
          { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '50000' },
          { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: String(limitMinor) },
        ],
        merchants: [],
      },
    ],
    apiKeys: [{ handle: 'x-key', agent: 'x' }],
  };
}

const buy = (svc: ServiceProcess, key: string, amountMinor: number, reason: string, headers?: Record<string, string>) =>
  headers
    ? fetch(`${svc.url}/v1/purchase-requests`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ merchant: 'Paper Co', amountMinor: String(amountMinor), reason }),
      }).then(async (res) => ({ status: res.status, body: await res.json() }) as ApiResponse)
    : svc.request('/v1/purchase-requests', { key, body: { merchant: 'Paper Co', amountMinor: String(amountMinor), reason } });

/**
 * The policy's DAY windows, summed: a run that crosses midnight in Berlin spreads its purchases over two
 * days' windows, and what these tests count is every purchase, whichever day it fell on.
 */
async function dayWindows(dataDir: string, policyId: string) {
  // A second connection to the same database, as another process would open it.
  const store = await openEmbeddedStore({ dataDir });
  try {
    const windows = await windowsOf(store.db, { policyId });
    const sum = (field: string) => windows.reduce((total, w) => total + (w[field] as number), 0);
    return { committedMinor: sum('committedMinor'), heldMinor: sum('heldMinor'), byDay: new Map(windows.map((w) => [w.periodKey as string, { committedMinor: w.committedMinor as number, heldMinor: w.heldMinor as number }])) };
  } finally {
    await store.close();
  }
}

/** The day a purchase was decided on (its request's instant) in the fixtures' zone: the DAY window it counts in. */
const dayOfDecision = (res: ApiResponse) => dayOf(res.body.decision.evaluatedAt, 'Europe/Berlin');

test('SIGTERM, then a restart on the same DATA_DIR: purchases, keys, spending and a pending approval are all there', async (t) => {
  const dataDir = tempDataDir(t);
  let svc = await startService(t, dataDir);
  const applied = await svc.admin('/admin/manifests', acmeManifest('durable'));
  t.is(applied.status, 200);
  const key: string = applied.body.apiKeys['buyer-key'].key;
  // acme's office policy: 200,000 a day, approval above 20,000.
  const spent: ApiResponse[] = [];
  for (let i = 0; i < 5; i++) spent.push(await buy(svc, key, 19000, `paper ${i}`));
  t.true(spent.every((r) => r.status === 201 && r.body.decision.outcome === 'APPROVED'));
  const pending = await buy(svc, key, 25000, 'a big order');
  t.is(pending.body.decision.outcome, 'REQUIRES_APPROVAL');
  const ids: string[] = [...spent, pending].map((r) => r.body.purchaseRequest.id);
  const readAll = (s: ServiceProcess) => Promise.all(ids.map((id) => s.request(`/v1/purchase-requests/${id}`, { key })));
  const before = await readAll(svc);
  t.true(before.every((r) => r.status === 200));

  t.is(await svc.stop('SIGTERM'), 0, 'a clean stop');
  svc = await startService(t, dataDir);

  t.deepEqual(await readAll(svc), before, 'every purchase reads back identically, with the same API key');
  const again = await svc.admin('/admin/manifests', acmeManifest('durable'));
  t.is(again.status, 200);
  t.true(Object.values(again.body.apiKeys as Record<string, { key?: string }>).every((k) => k.key === undefined), 're-applying issues no new key');
  // 95,000 spent and 25,000 held of 200,000: four more of 19,000 fit, a fifth would overspend (on the
  // same day; one that falls on the next day in Berlin starts from nothing).
  const used = new Map([[dayOfDecision(pending), 5 * 19000 + 25000]]);
  const expected: string[] = [];
  const outcomes: string[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await buy(svc, key, 19000, `after restart ${i}`);
    const before = used.get(dayOfDecision(res)) ?? 0;
    expected.push(before + 19000 <= 200_000 ? 'APPROVED' : 'REJECTED');
    if (before + 19000 <= 200_000) used.set(dayOfDecision(res), before + 19000);
    outcomes.push(res.body.decision.outcome);
  }
  t.deepEqual(outcomes, expected);
  if (new Set([...spent, pending].map(dayOfDecision)).size === 1 && used.size === 1) t.deepEqual(outcomes, ['APPROVED', 'APPROVED', 'APPROVED', 'APPROVED', 'REJECTED']);
  const answered = await svc.admin(`/admin/purchase-requests/${pending.body.purchaseRequest.id}/answer`, { answer: 'APPROVE', person: 'ana' });
  t.is(answered.status, 200, JSON.stringify(answered.body));
  t.is((await svc.request(`/v1/purchase-requests/${pending.body.purchaseRequest.id}`, { key })).body.purchase.status, 'APPROVED');
  t.is(await svc.stop('SIGTERM'), 0);
});

test('SIGKILL in the middle of a burst: every 201 is readable and counted, and retries settle the rest exactly once', async (t) => {
  const dataDir = tempDataDir(t);
  let svc = await startService(t, dataDir);
  const applied = await svc.admin('/admin/manifests', budgetManifest('crash', 10_000_000));
  const key: string = applied.body.apiKeys['x-key'].key;
  const policyId: string = applied.body.policies.daily.id;
  const N = 80;
  let created = 0;
  let killed = false;
  const results = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      buy(svc, key, 1000, `burst ${i}`, { 'Idempotency-Key': `burst-${i}` }).then(
        (res) => {
          if (res.status === 201 && ++created === 10 && !killed) {
            killed = true;
            svc.child.kill('SIGKILL');
          }
          return res;
        },
        () => null,
      ),
    ),
  );
  await svc.stop('SIGKILL');
  const acknowledged = results.filter((r): r is ApiResponse => r !== null && r.status === 201);
  t.true(acknowledged.length >= 10);
  t.true(results.every((r) => r === null || r.status === 201), 'nothing failed except by the kill');

  svc = await startService(t, dataDir);
  for (const r of acknowledged) {
    const read = await svc.request(`/v1/purchase-requests/${r.body.purchaseRequest.id}`, { key });
    t.is(read.status, 200);
    t.is(read.body.purchase.status, 'APPROVED');
  }
  const stored = await dayWindows(dataDir, policyId);
  t.true(stored.committedMinor >= acknowledged.length * 1000, 'every acknowledged purchase is counted');
  t.is(stored.committedMinor % 1000, 0, 'no half-applied purchase');
  // A client retries what it got no answer for: each request is decided exactly once in total.
  const retried = await Promise.all(results.map((r, i) => (r === null ? buy(svc, key, 1000, `burst ${i}`, { 'Idempotency-Key': `burst-${i}` }) : null)));
  t.true(retried.every((r) => r === null || r.status === 200 || r.status === 201));
  const replayedIds = new Set(retried.filter((r) => r?.status === 200).map((r) => r!.body.purchaseRequest.id));
  t.true(acknowledged.every((r) => !replayedIds.has(r.body.purchaseRequest.id)));
  t.is((await dayWindows(dataDir, policyId)).committedMinor, N * 1000, 'exactly N purchases are counted after the retries');
  t.is(await svc.stop('SIGTERM'), 0);
});

test('two service processes on one DATA_DIR: 200 concurrent purchases at one budget, no overspend, exact counters', async (t) => {
  const dataDir = tempDataDir(t);
  const one = await startService(t, dataDir);
  const two = await startService(t, dataDir, { RUN_JOBS: '0' });
  const applied = await one.admin('/admin/manifests', budgetManifest('shared', 200_000));
  const key: string = applied.body.apiKeys['x-key'].key;
  const policyId: string = applied.body.policies.daily.id;
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => buy(i % 2 === 0 ? one : two, key, 1500, `shared ${i}`)));
  t.true(results.every((r) => r.status === 201), results.find((r) => r.status !== 201)?.body?.error?.message);
  const approved = results.filter((r) => r.body.decision.outcome === 'APPROVED');
  // 133 × 1,500 = 199,500 fits in 200,000; the 134th would not: on each day the requests fell on in Berlin
  // (all on one, unless the run crossed midnight).
  const asked = new Map<string, number>();
  for (const r of results) asked.set(dayOfDecision(r), (asked.get(dayOfDecision(r)) ?? 0) + 1);
  const fits = (day: string) => Math.min(asked.get(day)!, 133);
  t.is(approved.length, [...asked.keys()].reduce((n, day) => n + fits(day), 0));
  if (asked.size === 1) t.is(approved.length, 133);
  t.is(results.filter((r) => r.body.decision.outcome === 'REJECTED').length, 200 - approved.length);
  t.true(approved.some((r, i) => i % 2 === 0) && results.some((r, i) => i % 2 === 1 && r.body.decision.outcome === 'APPROVED'), 'both processes approved some');
  t.is(await one.stop('SIGTERM'), 0);
  t.is(await two.stop('SIGTERM'), 0);
  const windows = await dayWindows(dataDir, policyId);
  for (const day of asked.keys()) t.is(windows.byDay.get(day)?.committedMinor, fits(day) * 1500, `no overspend, exact counter on ${day}`);
  t.is(windows.heldMinor, 0);
  const store = await openEmbeddedStore({ dataDir });
  t.teardown(() => store.close());
  t.is(await store.db.collection('purchases').countDocuments({}), 200);
});

test('an approval that expired while the service was down is expired, its hold released, right after the start', async (t) => {
  const dataDir = tempDataDir(t);
  let svc = await startService(t, dataDir, { JOBS_PROCESS_EVERY: '1 second' });
  const applied = await svc.admin('/admin/manifests', budgetManifest('expiry', 1_000_000, 'PT2S'));
  const key: string = applied.body.apiKeys['x-key'].key;
  const policyId: string = applied.body.policies.daily.id;
  const pending = await buy(svc, key, 60000, 'needs a yes');
  t.is(pending.body.decision.outcome, 'REQUIRES_APPROVAL');
  t.is(await svc.stop('SIGTERM'), 0);
  t.is((await dayWindows(dataDir, policyId)).heldMinor, 60000);
  await sleep(2500);
  svc = await startService(t, dataDir, { JOBS_PROCESS_EVERY: '1 second' });
  const id = pending.body.purchaseRequest.id;
  const deadline = Date.now() + 30_000;
  let status = '';
  while (Date.now() < deadline && (status = (await svc.request(`/v1/purchase-requests/${id}`, { key })).body.purchase.status) !== 'EXPIRED') await sleep(200);
  t.is(status, 'EXPIRED');
  t.is(await svc.stop('SIGTERM'), 0);
  t.is((await dayWindows(dataDir, policyId)).heldMinor, 0);
});

test('npm run admin -- backup copies the live database; a service started on the copy has everything', async (t) => {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const { copyFileSync, mkdirSync, statSync } = await import('node:fs');
  const { join } = await import('node:path');
  const dataDir = tempDataDir(t);
  const svc = await startService(t, dataDir);
  const applied = await svc.admin('/admin/manifests', budgetManifest('backed-up', 1_000_000));
  const key: string = applied.body.apiKeys['x-key'].key;
  const bought = await buy(svc, key, 1234, 'before the backup');
  t.is(bought.status, 201);
  const file = join(dataDir, '..', 'backup.db');
  // While the service runs and keeps writing.
  const writes = Promise.all(Array.from({ length: 20 }, (_, i) => buy(svc, key, 100, `during ${i}`)));
  const { stdout } = await promisify(execFile)(process.execPath, ['scripts/admin.ts', 'backup', file], { env: { ...process.env, DATA_DIR: dataDir } });
  t.regex(stdout, /Backed up .*spend-control\.db to .*backup\.db/);
  t.true((await writes).every((r) => r.status === 201));
  t.is(statSync(file).mode & 0o777, 0o600);
  await t.throwsAsync(promisify(execFile)(process.execPath, ['scripts/admin.ts', 'backup', file], { env: { ...process.env, DATA_DIR: dataDir } }), { message: /already exists/ });
  t.is(await svc.stop('SIGTERM'), 0);

  // Restore: the backup file becomes spend-control.db of a DATA_DIR.
  const restoredDir = join(dataDir, '..', 'restored');
  mkdirSync(restoredDir, { mode: 0o700 });
  copyFileSync(file, join(restoredDir, 'spend-control.db'));
  const restored = await startService(t, restoredDir);
  const read = await restored.request(`/v1/purchase-requests/${bought.body.purchaseRequest.id}`, { key });
  t.is(read.status, 200);
  t.is(read.body.purchase.amountMinor, '1234');
  t.is(await restored.stop('SIGTERM'), 0);
});

test('the generated webhook key outlives a restart: an endpoint created before it still gets deliveries signed with its secret', async (t) => {
  const { createTestPki, startReceiver } = await import('../helpers/https-receiver.ts');
  const { verifySignature } = await import('../../src/webhooks/signing.ts');
  const pki = await createTestPki();
  t.teardown(() => pki.cleanup());
  const receiver = await startReceiver({ ...pki.trusted, responses: [{ status: 200 }] });
  t.teardown(() => receiver.close());
  const dataDir = tempDataDir(t);
  // No WEBHOOK_ENCRYPTION_KEY: the service generates one and keeps it in DATA_DIR.
  const env = { WEBHOOK_ENCRYPTION_KEY: '', NODE_EXTRA_CA_CERTS: pki.caPath, WEBHOOK_UNSAFE_ALLOW_LOCAL: '1', JOBS_PROCESS_EVERY: '1 second' };
  let svc = await startService(t, dataDir, env);
  const applied = await svc.admin('/admin/manifests', acmeManifest('hooks'));
  const admin: string = applied.body.apiKeys['admin-key'].key;
  const created = await svc.request('/v1/webhooks', { key: admin, body: { url: `${receiver.origin}/hook`, subscribedTypes: ['purchase.approved'] } });
  t.is(created.status, 201, JSON.stringify(created.body));
  t.is(await svc.stop('SIGTERM'), 0);

  svc = await startService(t, dataDir, env);
  const bought = await buy(svc, applied.body.apiKeys['buyer-key'].key, 1999, 'after the restart');
  t.is(bought.body.decision.outcome, 'APPROVED');
  const deadline = Date.now() + 45_000;
  while (receiver.requests.length === 0 && Date.now() < deadline) await sleep(200);
  const [delivery] = receiver.requests;
  t.truthy(delivery, `no delivery arrived:\n${svc.output()}`);
  t.true(
    verifySignature({ header: String(delivery.headers['service-webhook-signature']), timestamp: String(delivery.headers['service-webhook-timestamp']), body: delivery.body, secret: created.body.secret }),
    'signed with the secret shown at creation, unsealed with the key kept from the first start',
  );
  t.is(JSON.parse(delivery.body.toString()).data.purchaseRequestId, bought.body.purchaseRequest.id);
  t.is(await svc.stop('SIGTERM'), 0);
});

test('two processes on one DATA_DIR: purchases held in one are answered from the other, counters stay exact; a change in one governs the next decision in the other', async (t) => {
  const dataDir = tempDataDir(t);
  const one = await startService(t, dataDir);
  const two = await startService(t, dataDir, { RUN_JOBS: '0' });
  const manifest = budgetManifest('answered', 300_000);
  manifest.policies[0].rules[0].amountMinor = '2000'; // above 20.00 a person decides
  const applied = await one.admin('/admin/manifests', manifest);
  const key: string = applied.body.apiKeys['x-key'].key;
  const policyId: string = applied.body.policies.daily.id;
  // Held purchases are submitted to `two` and answered through `one` while more purchases arrive on both.
  const answers: Promise<ApiResponse>[] = [];
  const results = await Promise.all(
    Array.from({ length: 160 }, async (_, i) => {
      const held = i % 2 === 1;
      const res = await buy(held ? two : one, key, held ? 2500 : 1500, `mixed ${i}`);
      if (held && res.status === 201 && res.body.decision.outcome === 'REQUIRES_APPROVAL') {
        answers.push(one.admin(`/admin/purchase-requests/${res.body.purchaseRequest.id}/answer`, { answer: i % 4 === 1 ? 'APPROVE' : 'REJECT', person: 'ana' }));
      }
      return res;
    }),
  );
  t.true(results.every((r) => r.status === 201), results.find((r) => r.status !== 201)?.body?.error?.message);
  const answered = await Promise.all(answers);
  t.true(answered.length > 0 && answered.every((r) => r.status === 200), answered.find((r) => r.status !== 200)?.body?.error?.message);

  // What the purchases say, read back through the API, against what the window counts.
  const finals = await Promise.all(results.map((r) => two.request(`/v1/purchase-requests/${r.body.purchaseRequest.id}`, { key })));
  const sum = (status: string) => finals.filter((r) => r.body.purchase.status === status).reduce((total, r) => total + Number(r.body.purchase.amountMinor), 0);
  const windows = await dayWindows(dataDir, policyId);
  t.is(windows.committedMinor, sum('APPROVED'), 'committed = the approved purchases');
  t.is(windows.heldMinor, sum('PENDING_APPROVAL'), 'held = the purchases still waiting');
  for (const [day, w] of windows.byDay) t.true(w.committedMinor + w.heldMinor <= 300_000, `never overspent on ${day}`);

  // A policy change applied through one process governs the very next decision in the other.
  manifest.policies[0].merchants = [{ listType: 'BLOCK', label: 'Paper Co' }] as never[];
  t.is((await one.admin('/admin/manifests', manifest)).status, 200);
  const blocked = await buy(two, key, 100, 'after the change');
  t.deepEqual(blocked.body.decision.reasonCodes, ['MERCHANT_BLOCKED']);
  // So does an agent disabled through the other one.
  (manifest.agents[0] as { status?: string }).status = 'DISABLED';
  t.is((await two.admin('/admin/manifests', manifest)).status, 200);
  const disabled = await buy(one, key, 100, 'after disabling');
  t.is(disabled.status, 201);
  t.deepEqual(disabled.body.decision.reasonCodes, ['AGENT_DISABLED']);
  t.is(await one.stop('SIGTERM'), 0);
  t.is(await two.stop('SIGTERM'), 0);
});

test('SIGKILL under a steady load of 32 connections, three rounds: every 201 reads back identically, counters equal the purchases, one decision per key', async (t) => {
  const dataDir = tempDataDir(t);
  let svc = await startService(t, dataDir);
  const applied = await svc.admin('/admin/manifests', budgetManifest('rounds', 100_000_000));
  const key: string = applied.body.apiKeys['x-key'].key;
  const policyId: string = applied.body.policies.daily.id;
  const acknowledged = new Map<string, ApiResponse>(); // Idempotency-Key -> the 201 the client received
  const sent: string[] = [];
  for (let round = 0; round < 3; round++) {
    let killed = false;
    let next = 0;
    const target = svc;
    // 32 connections, each sending its next purchase as soon as the last one was answered.
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (!killed) {
          const idempotencyKey = `round-${round}-${next++}`;
          sent.push(idempotencyKey);
          const res = await buy(target, key, 1000, idempotencyKey, { 'Idempotency-Key': idempotencyKey }).catch(() => null);
          if (res === null) return; // the process is gone
          t.is(res.status, 201);
          acknowledged.set(idempotencyKey, res);
          if (acknowledged.size >= (round + 1) * 60 && !killed) {
            killed = true;
            target.child.kill('SIGKILL');
          }
        }
      }),
    );
    await target.stop('SIGKILL');
    svc = await startService(t, dataDir);
  }
  // Every 201 reads back with the decision the client was given.
  for (const res of acknowledged.values()) {
    const read = await svc.request(`/v1/purchase-requests/${res.body.purchaseRequest.id}`, { key });
    t.is(read.status, 200);
    t.like(read.body.purchase.decision, res.body.decision);
    t.is(read.body.purchase.id, res.body.purchaseRequest.id);
    t.is(read.body.purchase.status, 'APPROVED');
  }
  // Every key sent, sent again: an acknowledged one replays its own purchase; any other is decided now, once.
  const retried = await Promise.all(sent.map((k) => buy(svc, key, 1000, k, { 'Idempotency-Key': k })));
  for (const [i, k] of sent.entries()) {
    const first = acknowledged.get(k);
    if (first) {
      t.is(retried[i].status, 200);
      t.is(retried[i].body.purchaseRequest.id, first.body.purchaseRequest.id);
    } else {
      t.true(retried[i].status === 200 || retried[i].status === 201);
    }
  }
  const store = await openEmbeddedStore({ dataDir });
  t.teardown(() => store.close());
  const purchases = await store.db.collection('purchases').countDocuments({});
  t.is(purchases, sent.length, 'one purchase per key, whatever the kills interrupted');
  t.is((await dayWindows(dataDir, policyId)).committedMinor, purchases * 1000, 'the windows count exactly the recorded purchases');
  t.is(await svc.stop('SIGTERM'), 0);
});
