// Fences against write skew (docs/internals/design.md §2). MongoDB runs transactions under snapshot isolation: two
// concurrent transactions conflict (one gets WriteConflict and is retried) exactly when they write a
// document in common; what one only reads, the other may change, and both commit. The embedded engine
// runs one transaction at a time, so the race cannot be staged here; what makes it impossible on
// MongoDB can be proved here: the write sets of the operations that must not interleave intersect.
// (Before the fences, a submission read the agent but wrote only new documents, and an archive wrote
// only existing ones: empty intersection, so on MongoDB both commit and the archived agent keeps a
// pending approval nobody cancels.) The last test stages the race through HTTP, which on the embedded
// engine checks the outcome and on `npm run test:mongo` runs it truly concurrently.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { purchase } from '../helpers/shop.ts';
import { testStore } from '../helpers/store.ts';
import { ensureSigningKey } from '../../src/receipts/keys.ts';
import { InstrumentedStore, commonWrites, writeSet, type TransactionRecord } from '../helpers/instrumented-store.ts';
import { periodOfPurchase, windowOfPurchase } from '../helpers/windows.ts';

let app: TestApp;
let store: InstrumentedStore;
let handles = 0;

test.before(async () => {
  store = new InstrumentedStore(await testStore());
  app = await startApp({ store, env: { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex'), WEBHOOK_UNSAFE_ALLOW_LOCAL: '1' } });
  // As a web process does at start: otherwise the first decision's transaction would be the key's own.
  await ensureSigningKey(app.deps.store, app.deps.config);
});
test.after.always(async () => {
  await app?.close();
  await store?.close();
});

type Rule = Record<string, unknown>;
const manifest = (handle: string, rules: Rule[]) => ({
  organization: { handle, name: 'Fenced', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT1H' },
  people: [{ handle: 'ana', name: 'Ana', email: `ana@${handle}.example` }],
  agents: [{ handle: 'a', name: 'Agent A' }],
  policies: [{ handle: 'p', name: 'Rules', scope: 'ORGANIZATION', currencies: ['EUR'], rules, merchants: [] }],
  apiKeys: [{ handle: 'a-key', agent: 'a' }, { handle: 'admin-key' }],
});
const ASK_ABOVE_100: Rule = { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '10000' };
const DAY_BUDGET: Rule = { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '1000000' };
const MONTH_BUDGET: Rule = { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '5000000' };

/** Runs an HTTP call and returns the transaction it committed (the first, if several). */
async function committed<T>(call: () => Promise<T>): Promise<{ result: T; tx: TransactionRecord }> {
  const mark = store.transactions.length;
  const result = await call();
  const tx = store.transactions.slice(mark).find((r) => r.outcome === 'committed');
  if (!tx) throw new Error('no transaction committed');
  return { result, tx };
}

test.serial('submission, answer, archive and the cancellations it makes all write the agent: on MongoDB they cannot interleave', async (t) => {
  const handle = `fence-agent-${++handles}`;
  const org = await applyManifest(app, manifest(handle, [ASK_ABOVE_100]));
  const key = org.keys['a-key'];
  const agent = `agents/${org.agents.a.id}`;
  const submit = await committed(() => app.request('/v1/purchase-requests', { key, body: purchase(20000) }));
  t.is(submit.result.body.decision.outcome, 'REQUIRES_APPROVAL');
  const other = await app.request('/v1/purchase-requests', { key, body: purchase(30000) });
  const answer = await committed(() => app.admin(`/admin/purchase-requests/${other.body.purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } }));
  t.is(answer.result.status, 200);
  const mark = store.transactions.length;
  const archive = await committed(() => app.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } }));
  t.is(archive.result.status, 200);
  // After the archive's commit, the cancellation of the approval it left pending (the first submission's).
  const cancel = store.transactions.slice(mark).find((r) => r.outcome === 'committed' && r.writes.some((w) => w.collection === 'approvals'));
  if (!cancel) throw new Error('no cancellation committed');
  const activate = await committed(() => app.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'ENABLED' } }));

  t.true(commonWrites(submit.tx, archive.tx).includes(agent), 'submit × archive');
  t.true(commonWrites(answer.tx, archive.tx).includes(agent), 'answer × archive');
  t.true(commonWrites(submit.tx, activate.tx).includes(agent), 'submit × activate');
  t.true(commonWrites(answer.tx, activate.tx).includes(agent), 'answer × activate');
  // A cancellation that read the agent ARCHIVED must not commit beside the agent's enabling again.
  t.true(commonWrites(cancel, activate.tx).includes(agent), 'cancel × activate');
});

test.serial('an approval that writes none of its policy’s windows writes the policy, as a new version’s activation does', async (t) => {
  const handle = `fence-policy-${++handles}`;
  const org = await applyManifest(app, manifest(handle, [ASK_ABOVE_100]));
  const key = org.keys['a-key'];
  const policy = `policies/${org.policies.p.id}`;
  // Approved by the engine, under a version with no SPEND_LIMIT: no window is written.
  const approved = await committed(() => app.request('/v1/purchase-requests', { key, body: purchase(5000) }));
  t.is(approved.result.body.decision.outcome, 'APPROVED');
  // Approved by a person, same version.
  const pending = await app.request('/v1/purchase-requests', { key, body: purchase(20000) });
  const answered = await committed(() => app.admin(`/admin/purchase-requests/${pending.body.purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } }));
  t.is(answered.result.body.purchase.status, 'APPROVED');
  // A new version brings a daily budget: the window it opens starts from what was approved before.
  const activation = await committed(() => app.admin('/admin/manifests', { body: manifest(handle, [ASK_ABOVE_100, DAY_BUDGET]) }));
  t.is(activation.result.status, 200);

  t.true(commonWrites(approved.tx, activation.tx).includes(policy), 'engine approval × activation');
  t.true(commonWrites(answered.tx, activation.tx).includes(policy), 'human approval × activation');

  const next = await app.request('/v1/purchase-requests', { key, body: purchase(1000) });
  t.is(next.body.decision.outcome, 'APPROVED');
  // The window of next's day opens with what was approved earlier that day (all 25000 unless Berlin's midnight fell in between).
  const day = await periodOfPurchase(store.db, next.body.purchaseRequest.id);
  let before = 0;
  for (const [id, amountMinor] of [[approved.result.body.purchaseRequest.id, 5000], [pending.body.purchaseRequest.id, 20000]] as const) {
    if ((await periodOfPurchase(store.db, id)) === day) before += amountMinor;
  }
  const window = await windowOfPurchase(store.db, org.policies.p.id, next.body.purchaseRequest.id);
  t.is(window!.openingBalanceMinor, before, 'the window opened with the spend approved before it');
});

test.serial('a shadow\'s start and the activation of its draft both write the policy: on MongoDB they cannot interleave', async (t) => {
  const handle = `fence-shadow-${++handles}`;
  await applyManifest(app, manifest(handle, [ASK_ABOVE_100]));
  const drafted = manifest(handle, [ASK_ABOVE_100, DAY_BUDGET]);
  (drafted.policies[0] as Record<string, unknown>).activate = false;
  const org = await applyManifest(app, drafted);
  const draftId = org.policies.p.draftVersionId!;
  const policy = `policies/${org.policies.p.id}`;
  const start = await committed(() => app.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: true } }));
  t.is(start.result.status, 200, start.result.text);
  const activation = await committed(() => app.admin('/admin/manifests', { body: manifest(handle, [ASK_ABOVE_100, DAY_BUDGET]) }));
  t.is(activation.result.status, 200);
  t.true(commonWrites(start.tx, activation.tx).includes(policy), 'shadow start × activation');
  // What the activation leaves: the shadow stopped, and a start on the now ACTIVE version refused.
  const again = await app.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: true } });
  t.is(again.status, 409);
  t.is(again.body.error.code, 'version_not_draft');
  t.like(await store.db.collection<{ _id: string }>('policy_shadows').findOne({ _id: draftId }), { status: 'STOPPED', stopReason: 'ACTIVATED' });
});

test.serial('an approval that writes its policy’s DAY and MONTH windows needs no policy fence (no extra contention)', async (t) => {
  const org = await applyManifest(app, manifest(`fence-free-${++handles}`, [DAY_BUDGET, MONTH_BUDGET]));
  const approved = await committed(() => app.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(5000) }));
  t.is(approved.result.body.decision.outcome, 'APPROVED');
  const written = approved.tx.writes.flatMap((w) => w.ids);
  t.false(written.includes(`policies/${org.policies.p.id}`));
  t.is(written.filter((id) => id.startsWith('budget_windows/')).length, 2);
});

test.serial('an event recorded for no endpoint writes what an endpoint’s creation and every PATCH write: on MongoDB it cannot commit after an endpoint it did not see, and miss it', async (t) => {
  // Before the fence, the submission's transaction read the endpoints (none subscribed), recorded its event as
  // dispatched to nobody and wrote nothing the creation wrote: on MongoDB a purchase whose transaction began
  // before the endpoint's creation and committed after it was never delivered there.
  const org = await applyManifest(app, manifest(`fence-webhook-${++handles}`, [ASK_ABOVE_100]));
  const key = org.keys['a-key'];
  const admin = org.keys['admin-key'];
  const fence = `webhook_quotas/${org.organizationId}`;
  const submit = (amountMinor: number) => committed(() => app.request('/v1/purchase-requests', { key, body: purchase(amountMinor) }));
  const patch = (id: string, body: Record<string, unknown>) => committed(() => app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: admin, body }));

  const beforeAny = await submit(5000);
  t.is(beforeAny.result.body.decision.outcome, 'APPROVED');
  const create = await committed(() => app.request('/v1/webhooks', { key: admin, body: { url: 'https://localhost/hooks', subscribedTypes: ['purchase.rejected'] } }));
  t.is(create.result.status, 201, create.result.text);
  const id = create.result.body.id;
  const otherType = await submit(5000); // approvals are not subscribed yet
  const subscribe = await patch(id, { subscribedTypes: ['purchase.approved'] });
  t.is(subscribe.result.status, 200, subscribe.result.text);
  await patch(id, { status: 'DISABLED' });
  const whileDisabled = await submit(5000);
  const enable = await patch(id, { status: 'ACTIVE' });
  t.is(enable.result.body.status, 'ACTIVE');
  const subscribed = await submit(5000);
  const agentEvent = await committed(() => app.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'DISABLED' } }));
  t.is(agentEvent.result.status, 200, agentEvent.result.text);

  t.true(commonWrites(beforeAny.tx, create.tx).includes(fence), 'event for nobody × creation');
  t.true(commonWrites(otherType.tx, subscribe.tx).includes(fence), 'event for nobody × a PATCH adding its type');
  t.true(commonWrites(whileDisabled.tx, enable.tx).includes(fence), 'event for nobody × enabling again');
  t.true(commonWrites(agentEvent.tx, enable.tx).includes(fence), 'an agent’s event for nobody × enabling again');
  // An event the dispatcher fans out is matched to the endpoints after its commit: no fence, no contention.
  t.false(writeSet(subscribed.tx).has(fence), 'event for the dispatcher');
  const events = store.db.collection<{ _id: string; dispatchedAt: Date | null }>('events');
  t.is(await events.countDocuments({ organizationId: org.organizationId, dispatchedAt: null }), 1);
});

test.serial('archive during concurrent submissions: no pending approval on the archived agent, no readback saying ENABLED', async (t) => {
  const org = await applyManifest(app, manifest(`race-${++handles}`, [ASK_ABOVE_100]));
  const key = org.keys['a-key'];
  const submissions = Array.from({ length: 30 }, (_, i) => app.request('/v1/purchase-requests', { key, body: purchase(20000 + i) }));
  const archive = app.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } });
  const results = await Promise.all(submissions);
  t.is((await archive).status, 200);
  t.true(results.every((r) => r.status === 201));

  t.is(await store.db.collection('approvals').countDocuments({ agentId: org.agents.a.id, state: 'PENDING' }), 0);
  for (const r of results) {
    const read = (await app.request(`/v1/purchase-requests/${r.body.purchaseRequest.id}`, { key })).body.purchase;
    t.is(read.agent.status, 'ARCHIVED');
    t.true(read.status === 'CANCELLED' || (read.status === 'REJECTED' && read.decision.reasonCodes.includes('AGENT_DISABLED')), `${read.id} is ${read.status}`);
  }
});
