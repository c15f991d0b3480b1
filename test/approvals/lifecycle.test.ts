// The pending-approval lifecycle (docs/reference/contract.md §3.1, docs/internals/design.md §4 item 7) through real HTTP and real Agenda
// jobs: approve, reject, expire, answer after expiry, answer racing expiry, cancel on archive.
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { windowOfPurchase } from '../helpers/windows.ts';
import { answerApproval } from '../../src/approvals/answer.ts';
import { expireApproval } from '../../src/approvals/close.ts';

let app: TestApp;

test.before(async () => {
  app = await startApp({ jobs: { sweepEvery: '1 second' } });
});
test.after.always(() => app?.close());

let orgCounter = 0;
async function freshShop(ttl = 'PT1H'): Promise<AppliedOrg> {
  const manifest: any = shopManifest(`shop-${++orgCounter}`);
  manifest.organization.approvalTtl = ttl;
  return applyManifest(app, manifest);
}

const submit = (org: AppliedOrg, amountMinor: number) =>
  app.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(amountMinor) });
const read = async (org: AppliedOrg, id: string) => (await app.request(`/v1/purchase-requests/${id}`, { key: org.keys['a-key'] })).body.purchase;
const answer = (id: string, body: Record<string, unknown>) => app.admin(`/admin/purchase-requests/${id}/answer`, { body });
/** The DAY window the purchase counts toward: the day it was requested in, in the organisation's zone. */
const dayWindow = (org: AppliedOrg, id: string) => windowOfPurchase(app.store.db, org.policies.main.id, id);
const eventsFor = (id: string) => app.store.db.collection('events').find({ 'data.purchaseRequestId': id }).sort({ _id: 1 }).toArray();

const scheduledExpiries = (approvalId: string) =>
  app.store.db.collection('agendaJobs').countDocuments({ name: 'approvals.expire', 'data.approvalId': approvalId });

async function until<T>(probe: () => Promise<T>, done: (value: T) => boolean, seconds = 15): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(100);
  }
}

test('a person approves: the hold becomes spend and the readback says who and when', async (t) => {
  const org = await freshShop();
  const created = await submit(org, 30000);
  const id = created.body.purchaseRequest.id;
  t.is((await dayWindow(org, id))!.heldMinor, 30000);
  const approval = await app.store.db.collection('approvals').findOne({ purchaseId: id });
  t.is(await scheduledExpiries(String(approval!._id)), 1, 'its expiry is on the Agenda schedule');
  const pending = await read(org, id);
  t.like(pending, { status: 'PENDING_APPROVAL', resolvedAt: null });
  t.like(pending.approval, { state: 'PENDING', isPending: true });
  t.is(pending.decision.kind, 'INITIAL');

  const res = await answer(id, { answer: 'APPROVE', person: 'ana', comment: 'Needed for the launch' });
  t.is(res.status, 200);
  const done = await read(org, id);
  t.is(done.status, 'APPROVED');
  t.like(done.approval, { state: 'APPROVED', isPending: false, resolvedBy: { name: 'Ana Approver' }, comment: 'Needed for the launch', escalationReasonCodes: ['APPROVAL_THRESHOLD_EXCEEDED'] });
  t.truthy(done.approval.resolvedAt);
  t.like(done.decision, { kind: 'APPROVAL_REEVALUATION', outcome: 'APPROVED' });
  t.truthy(done.resolvedAt);
  const window = await dayWindow(org, id);
  t.is(window!.heldMinor, 0);
  t.is(window!.committedMinor, 30000);
  const events = await eventsFor(id);
  t.deepEqual(events.map((e: any) => e.type), ['purchase.approval_required', 'purchase.approved']);
  t.is(events[1].data.resolvedBy, 'HUMAN');
  t.is(events[1].data.approvalRequestId, events[0].data.approvalRequestId);

  const again = await answer(id, { answer: 'REJECT', person: 'ana' });
  t.is(again.status, 409);
  t.is(again.body.error.code, 'approval_not_pending');
  t.deepEqual(await read(org, id), done, 'a refused answer changes nothing');
});

test('a person rejects: the hold is released', async (t) => {
  const org = await freshShop();
  const id = (await submit(org, 25000)).body.purchaseRequest.id;
  const res = await answer(id, { answer: 'REJECT', person: 'ana' });
  t.is(res.status, 200);
  const done = await read(org, id);
  t.is(done.status, 'REJECTED');
  t.like(done.approval, { state: 'REJECTED', isPending: false, comment: null });
  t.like(done.decision, { kind: 'APPROVAL_REEVALUATION', outcome: 'REJECTED' });
  const window = await dayWindow(org, id);
  t.is(window!.heldMinor, 0);
  t.is(window!.committedMinor, 0);
  const events = await eventsFor(id);
  t.is(events.at(-1)!.type, 'purchase.rejected');
  t.is(events.at(-1)!.data.resolvedBy, 'HUMAN');
});

test('an approval nobody answers expires on the Agenda job: hold released, event once, answers refused', async (t) => {
  const org = await freshShop('PT1S');
  const id = (await submit(org, 30000)).body.purchaseRequest.id;
  t.is((await dayWindow(org, id))!.heldMinor, 30000);
  const expired = await until(() => read(org, id), (p) => p.status === 'EXPIRED');
  t.is(expired.status, 'EXPIRED');
  t.like(expired.approval, { state: 'EXPIRED', isPending: false, resolvedBy: null });
  t.like(expired.decision, { outcome: 'REJECTED', kind: 'APPROVAL_EXPIRED' });
  t.is((await dayWindow(org, id))!.heldMinor, 0);
  const late = await answer(id, { answer: 'APPROVE', person: 'ana' });
  t.is(late.status, 409);
  t.is(late.body.error.code, 'approval_not_pending');
  await sleep(1500); // the sweep runs again meanwhile: still exactly one expiry
  const events = await eventsFor(id);
  t.deepEqual(events.map((e: any) => e.type), ['purchase.approval_required', 'purchase.approval_expired']);
  t.deepEqual(await read(org, id), expired);
});

test('a crash between commit and scheduling loses no expiry: the recurring sweep expires it', async (t) => {
  const crashing = await startApp({ store: app.store, scheduler: { schedule: () => Promise.reject(new Error('worker gone')) } });
  try {
    const manifest: any = shopManifest('crashy');
    manifest.organization.approvalTtl = 'PT1S';
    const org = await applyManifest(crashing, manifest);
    const created = await crashing.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(30000) });
    t.is(created.status, 201, 'a scheduling failure never fails the committed submission');
    const id = created.body.purchaseRequest.id;
    const approval = await app.store.db.collection('approvals').findOne({ purchaseId: id });
    t.is(await scheduledExpiries(String(approval!._id)), 0, 'no expiry job was scheduled');
    const expired = await until(() => crashing.request(`/v1/purchase-requests/${id}`, { key: org.keys['a-key'] }).then((r) => r.body.purchase), (p) => p.status === 'EXPIRED');
    t.is(expired.status, 'EXPIRED');
  } finally {
    await crashing.close();
  }
});

test('an answer racing the expiry: exactly one wins and the budget agrees with it', async (t) => {
  for (let round = 0; round < 10; round++) {
    const org = await freshShop('PT1H');
    const id = (await submit(org, 30000)).body.purchaseRequest.id;
    const approval = await app.store.db.collection('approvals').findOne({ purchaseId: id });
    const expiresAt: Date = approval!.expiresAt;
    // Two processes with slightly different clocks: one still in time to answer, one already past expiry.
    const early = { ...app.deps, now: () => new Date(expiresAt.getTime() - 1) };
    const late = { ...app.deps, now: () => new Date(expiresAt.getTime() + 1) };
    const [answered, expired] = await Promise.allSettled([
      answerApproval(early, { purchaseId: id, answer: 'APPROVE', personHandle: 'ana', comment: null }),
      expireApproval(late, String(approval!._id)),
    ]);
    const answerWon = answered.status === 'fulfilled';
    const expiryWon = expired.status === 'fulfilled' && expired.value === true;
    t.true(answerWon !== expiryWon, `round ${round}: exactly one wins`);
    const final = await read(org, id);
    const window = await dayWindow(org, id);
    t.is(window!.heldMinor, 0);
    if (answerWon) {
      t.is(final.status, 'APPROVED');
      t.is(window!.committedMinor, 30000);
    } else {
      t.is(final.status, 'EXPIRED');
      t.is(window!.committedMinor, 0);
      t.is((answered as PromiseRejectedResult).reason.code, 'approval_not_pending');
    }
  }
});

test('policies changed since escalation: a person’s approval is overruled by a block now in force', async (t) => {
  const manifest: any = shopManifest(`changed-${++orgCounter}`);
  const org = await applyManifest(app, manifest);
  const id = (await submit(org, 30000)).body.purchaseRequest.id;
  manifest.policies[0].rules[0].amountMinor = '25000'; // the per-purchase maximum drops below the amount
  await applyManifest(app, manifest);
  const res = await answer(id, { answer: 'APPROVE', person: 'ana' });
  t.is(res.status, 200);
  const done = await read(org, id);
  t.is(done.status, 'REJECTED');
  t.true(done.decision.reasonCodes.includes('POLICY_CHANGED_SINCE_ESCALATION'));
  t.is(done.approval.state, 'REJECTED');
  t.is((await dayWindow(org, id))!.heldMinor, 0);
});

test('archiving an agent cancels its pending approvals and releases their holds', async (t) => {
  const org = await freshShop();
  const id = (await submit(org, 30000)).body.purchaseRequest.id;
  const res = await app.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } });
  t.is(res.status, 200);
  const done = await read(org, id);
  t.is(done.status, 'CANCELLED');
  t.like(done.approval, { state: 'CANCELLED', isPending: false });
  t.is(done.agent.status, 'ARCHIVED');
  t.is((await dayWindow(org, id))!.heldMinor, 0);
  const refused = await submit(org, 100);
  t.deepEqual(refused.body.decision.reasonCodes, ['AGENT_DISABLED']);
});

test('answer validation: unknown person, unknown purchase, nobody asked, bad body', async (t) => {
  const org = await freshShop();
  const pendingId = (await submit(org, 30000)).body.purchaseRequest.id;
  const approvedId = (await submit(org, 100)).body.purchaseRequest.id;
  const stranger = await answer(pendingId, { answer: 'APPROVE', person: 'nobody' });
  t.is(stranger.status, 400);
  t.is(stranger.body.error.issues[0].code, 'UNKNOWN_PERSON');
  t.is((await answer('0190aaaa-0000-7000-8000-000000000000', { answer: 'APPROVE', person: 'ana' })).status, 404);
  const nobodyAsked = await answer(approvedId, { answer: 'APPROVE', person: 'ana' });
  t.is(nobodyAsked.status, 409);
  const bad = await answer(pendingId, { answer: 'MAYBE', person: 'ana' });
  t.is(bad.status, 400);
  t.like(await read(org, pendingId), { status: 'PENDING_APPROVAL' });
});

test('budget events: threshold at 80% once, exhausted at 100%', async (t) => {
  const org = await freshShop();
  const key = org.keys['a-key'];
  const buy = (amountMinor: number) => app.request('/v1/purchase-requests', { key, body: purchase(amountMinor) });
  await buy(15000); // 15%
  await buy(15000); // 30%
  for (let i = 0; i < 4; i++) await buy(15000); // 90%: crosses 80% once
  await buy(10000); // 100%: exhausted
  const events = await app.store.db.collection('events').find({ organizationId: org.organizationId, type: { $in: ['budget.threshold_reached', 'budget.exhausted'] } }).sort({ _id: 1 }).toArray();
  t.deepEqual(events.map((e: any) => e.type), ['budget.threshold_reached', 'budget.exhausted']);
  t.like(events[0].data, { policyId: org.policies.main.id, currency: 'EUR', periodKind: 'DAY', limitMinor: '100000', usedMinor: '90000' });
  t.is(events[1].data.usedMinor, '100000');
});
