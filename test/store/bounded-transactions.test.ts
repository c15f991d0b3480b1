// Bounded work per transaction (docs/internals/design.md §2). On MongoDB a transaction has a 60 s lifetime and a cache
// limit; one that rewrites all of a busy agent's purchases, or all of an endpoint's backlog, fails, is
// retried, fails again: that agent could never be archived. Each transaction here is counted by a Store
// wrapper, through the real HTTP surface, with a backlog far past any batch size.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { purchase } from '../helpers/shop.ts';
import { testStore } from '../helpers/store.ts';
import { InstrumentedStore, documentsWritten, type TransactionRecord } from '../helpers/instrumented-store.ts';
import { newId } from '../../src/ids.ts';
import { configureWebhooks } from '../../src/webhooks/runtime.ts';
import { webhookCollections } from '../../src/webhooks/documents.ts';
import { newDelivery } from '../../src/webhooks/dispatch.ts';
import type { EventDoc } from '../../src/events/documents.ts';
import { finishInterruptedArchives } from '../../src/approvals/close.ts';
import { manifest as replayManifest, V1_MERCHANTS, V1_RULES, V2_MERCHANTS, V2_RULES } from '../helpers/replay.ts';

/** Purchases of the busy agent. Raise it (ARCHIVE_TEST_PURCHASES=50000) to try a bigger backlog; nothing else changes. */
const PURCHASES = Number(process.env.ARCHIVE_TEST_PURCHASES || 5_000);
/** Pending approvals, more than one batch of the follow-up that cancels them. */
const PENDING = 120;
/** Pending deliveries of the endpoint that is disabled. */
const DELIVERIES = 2_000;
/** Chunks of changes, and of holds, an earlier lifetime of a shadow left. */
const SHADOW_CHUNKS = 1_200;
/** A batch of a cleared lifetime (500 chunks) and the shadow document it fences. */
const SHADOW_BATCH_BOUND = 501;
/** The most documents any one transaction may write here: a submission, an answer, a cancellation. */
const BOUND = 30;

let app: TestApp;
let store: InstrumentedStore;

test.before(async () => {
  store = new InstrumentedStore(await testStore());
  app = await startApp({ store, env: { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex') } });
  configureWebhooks(app.deps, { lookup: async () => [{ address: '93.184.215.14', family: 4 }] });
});
test.after.always(async () => {
  await app?.close();
  await store?.close();
});

const busyManifest = (handle: string) => ({
  organization: { handle, name: 'Busy', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT1H' },
  people: [{ handle: 'ana', name: 'Ana', email: `ana@${handle}.example` }],
  agents: [{ handle: 'busy', name: 'Busy agent' }],
  policies: [
    {
      handle: 'asks',
      name: 'Ask above 100',
      scope: 'ORGANIZATION',
      currencies: ['EUR'],
      rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '10000' }],
      merchants: [],
    },
  ],
  apiKeys: [{ handle: 'busy-key', agent: 'busy' }, { handle: 'admin-key' }],
});

/** Copies a real purchase (and its decision and read models) `count` times, outside any transaction. */
async function clonePurchases(purchaseId: string, count: number): Promise<string[]> {
  const db = store.db;
  const names = ['purchases', 'decisions', 'purchase_views', 'analytics_purchases'] as const;
  const original = {
    purchases: await db.collection('purchases').findOne({ _id: purchaseId as never }),
    decisions: await db.collection('decisions').findOne({ purchaseId }),
    purchase_views: await db.collection('purchase_views').findOne({ _id: purchaseId as never }),
    analytics_purchases: await db.collection('analytics_purchases').findOne({ _id: purchaseId as never }),
  };
  const ids: string[] = [];
  for (let start = 0; start < count; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - start) }, () => ({ purchase: newId(), decision: newId() }));
    ids.push(...batch.map((b) => b.purchase));
    for (const name of names) {
      const docs = batch.map(({ purchase: id, decision }) => {
        const doc = structuredClone(original[name]!) as Record<string, any>;
        if (name === 'decisions') return { ...doc, _id: decision, purchaseId: id };
        if (name === 'purchase_views') return { ...doc, _id: id, readback: { ...doc.readback, id } };
        if (name === 'purchases') return { ...doc, _id: id, decisionId: decision };
        return { ...doc, _id: id };
      });
      await db.collection(name).insertMany(docs as never[]);
    }
  }
  return ids;
}

/**
 * After a long synchronous stretch (cloning on the embedded engine) the server closes keep-alive
 * sockets that the client may be about to reuse: wait until a request gets through again.
 */
async function settle(): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await app.request('/health');
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}

function since(mark: number): TransactionRecord[] {
  return store.transactions.slice(mark);
}

const largest = (records: TransactionRecord[]) => Math.max(0, ...records.map(documentsWritten));

test.serial(`archiving an agent with ${PURCHASES} purchases and ${PENDING} pending approvals: every transaction stays small`, async (t) => {
  const org: AppliedOrg = await applyManifest(app, busyManifest('busy-shop'));
  const key = org.keys['busy-key'];
  const first = await app.request('/v1/purchase-requests', { key, body: purchase(500) });
  t.is(first.status, 201);
  t.is(first.body.decision.outcome, 'APPROVED');
  const clones = await clonePurchases(first.body.purchaseRequest.id, PURCHASES - 1 - PENDING);
  await settle();
  const pending: string[] = [];
  for (let i = 0; i < PENDING; i++) {
    const res = await app.request('/v1/purchase-requests', { key, body: purchase(20000) });
    t.is(res.body.decision.outcome, 'REQUIRES_APPROVAL');
    pending.push(res.body.purchaseRequest.id);
  }
  t.is(await store.db.collection('purchase_views').countDocuments({ agentId: org.agents.busy.id }), PURCHASES);

  const mark = store.transactions.length;
  const archived = await app.admin(`/admin/agents/${org.agents.busy.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } });
  t.is(archived.status, 200);
  t.is(archived.body.agent.status, 'ARCHIVED');

  const records = since(mark).filter((r) => r.outcome === 'committed');
  t.true(largest(records) <= BOUND, `a transaction wrote ${largest(records)} documents`);
  t.true(records.length > PENDING, 'the cancellations ran, one transaction each');

  // Everything the archive promises is true after the response, not just bounded.
  t.is(await store.db.collection('approvals').countDocuments({ agentId: org.agents.busy.id, state: 'PENDING' }), 0);
  const cancelled = await app.request(`/v1/purchase-requests/${pending[PENDING - 1]}`, { key });
  t.like(cancelled.body.purchase, { status: 'CANCELLED', agent: { status: 'ARCHIVED' } });
  const old = await app.request(`/v1/purchase-requests/${clones[clones.length - 1]}`, { key });
  t.like(old.body.purchase, { id: clones[clones.length - 1], status: 'APPROVED', agent: { status: 'ARCHIVED' } });
  t.falsy((await store.db.collection('agents').findOne({ _id: org.agents.busy.id as never }))!.cancelApprovals, 'the follow-up finished');

  // Enabled again: the readbacks say so at once, and no transaction rewrote them.
  const again = store.transactions.length;
  await app.admin(`/admin/agents/${org.agents.busy.id}`, { method: 'PATCH', body: { status: 'ENABLED' } });
  t.true(largest(since(again)) <= BOUND);
  t.is((await app.request(`/v1/purchase-requests/${clones[0]}`, { key })).body.purchase.agent.status, 'ENABLED');
});

test.serial(`disabling a webhook endpoint with ${DELIVERIES} pending deliveries: the transaction writes one document`, async (t) => {
  const org = await applyManifest(app, busyManifest('hooked-shop'));
  const admin = org.keys['admin-key'];
  const created = await app.request('/v1/webhooks', { key: admin, body: { url: 'https://hooks.example.com/in', subscribedTypes: ['purchase.approved'] } });
  t.is(created.status, 201);
  const endpointId = created.body.id ?? created.body.webhook?.id;
  const { deliveries, endpoints } = webhookCollections(store.db);
  const endpoint = (await endpoints.findOne({ _id: endpointId }))!;
  const later = new Date(Date.now() + 3_600_000);
  for (let start = 0; start < DELIVERIES; start += 1000) {
    const docs = Array.from({ length: Math.min(1000, DELIVERIES - start) }, () => {
      const event: EventDoc = { _id: newId(), type: 'purchase.approved', organizationId: org.organizationId, createdAt: new Date(), data: {}, dispatchedAt: new Date() };
      return { ...newDelivery(event, endpoint, new Date()), nextAttemptAt: later };
    });
    await deliveries.insertMany(docs);
  }
  const test = await app.request(`/v1/webhooks/${endpointId}/test`, { key: admin, method: 'POST' });
  t.is(test.status, 202);

  const mark = store.transactions.length;
  const disabled = await app.request(`/v1/webhooks/${endpointId}`, { key: admin, method: 'PATCH', body: { status: 'DISABLED' } });
  t.is(disabled.status, 200);
  t.true(largest(since(mark)) <= BOUND, `a transaction wrote ${largest(since(mark))} documents`);
  t.is(await deliveries.countDocuments({ endpointId, status: 'PENDING', eventType: { $ne: 'webhook.test' } }), 0);
  t.is(await deliveries.countDocuments({ endpointId, status: 'CANCELLED' }), DELIVERIES);
  t.is(await deliveries.countDocuments({ endpointId, eventType: 'webhook.test', status: { $ne: 'CANCELLED' } }), 1, 'a test delivery still goes to a disabled endpoint');
});

test.serial('an archive whose follow-up was interrupted is finished by the approval sweep', async (t) => {
  const org = await applyManifest(app, busyManifest('interrupted-shop'));
  const key = org.keys['busy-key'];
  const pending = await Promise.all([1, 2, 3].map(() => app.request('/v1/purchase-requests', { key, body: purchase(20000) })));
  // What a process that stopped right after the archive's commit leaves behind.
  await store.db.collection('agents').updateOne({ _id: org.agents.busy.id as never }, { $set: { status: 'ARCHIVED', cancelApprovals: true } });
  t.is(await store.db.collection('approvals').countDocuments({ agentId: org.agents.busy.id, state: 'PENDING' }), 3);

  t.is(await finishInterruptedArchives(app.deps), 3);
  for (const p of pending) t.is((await app.request(`/v1/purchase-requests/${p.body.purchaseRequest.id}`, { key })).body.purchase.status, 'CANCELLED');
  t.falsy((await store.db.collection('agents').findOne({ _id: org.agents.busy.id as never }))!.cancelApprovals);
  t.is(await finishInterruptedArchives(app.deps), 0, 'idempotent');
});

test.serial(`starting a shadow again after a lifetime that wrote ${SHADOW_CHUNKS} chunks of changes and holds: every transaction stays small`, async (t) => {
  const { keys } = await applyManifest(app, replayManifest('shadow-again', [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]));
  const draftId = (await applyManifest(app, replayManifest('shadow-again', [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: false }]))).policies.office.draftVersionId!;
  const shadow = (on: boolean) => app.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: on } });
  t.is((await shadow(true)).status, 200);
  t.is((await shadow(false)).status, 200);
  // What a long first lifetime leaves: far more chunks than one transaction should delete.
  const changes = Array.from({ length: SHADOW_CHUNKS }, (_, i) => ({ _id: `${draftId}:${i + 1}`, versionId: draftId, organizationId: 'x', fromKey: `k${i}`, toKey: `k${i}`, changes: '[]' }));
  const holds = Array.from({ length: SHADOW_CHUNKS }, (_, i) => ({ _id: `${draftId}:0:${i}:1`, shadowId: draftId, due: `${draftId}:0:${i}`, holds: '[]' }));
  await store.db.collection('shadow_decisions').insertMany(changes as never[]);
  await store.db.collection('shadow_holds').insertMany(holds as never[]);

  const mark = store.transactions.length;
  t.is((await shadow(true)).status, 200);
  t.true(largest(since(mark)) <= SHADOW_BATCH_BOUND, `a transaction wrote ${largest(since(mark))} documents`);
  t.is(await store.db.collection('shadow_decisions').countDocuments({ versionId: draftId }), 0);
  t.is(await store.db.collection('shadow_holds').countDocuments({ shadowId: draftId }), 0);
  // The new lifetime evaluates as before.
  t.is((await app.request('/v1/purchase-requests', { key: keys['buyer-key'], body: purchase(500) })).status, 201);
  await app.deps.shadows!.idle();
  t.is((await store.db.collection('policy_shadows').findOne({ _id: draftId as never }))!.summary.evaluated, 1);
});
