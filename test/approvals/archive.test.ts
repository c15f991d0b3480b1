// An agent's archive and its pending approvals (docs/reference/contract.md §3.1: PENDING, the agent is
// archived, CANCELLED). The archive commits first; its approvals are cancelled after, one transaction
// each (src/approvals/close.ts), by the same request or, should it stop half-way, by the approval sweep.
// What happens in between: a person's answer must not decide a purchase the archive is cancelling, and
// an agent enabled again before the cancellations reached its approvals keeps them waiting; and one
// already past its expiry when the cancellation reaches it has expired (nobody answered it in time).
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { windowOfPurchase } from '../helpers/windows.ts';
import { changeAgentStatus } from '../../src/agents/change-status.ts';
import { closeApproval, expireDueApprovals, finishInterruptedArchives } from '../../src/approvals/close.ts';
import { runCommand } from '../../src/commands/run-command.ts';

let app: TestApp;
/** The service's clock: a test may move it on. */
let clock = Date.now();
// No jobs: the approval sweeps run when a test says so (the tests run one at a time, as they sweep every organisation).
test.before(async () => {
  app = await startApp({ now: () => new Date(clock) });
});
test.after.always(() => app?.close());

let orgs = 0;
const freshShop = () => applyManifest(app, shopManifest(`archive-${++orgs}`));
async function pending(org: AppliedOrg): Promise<string> {
  const res = await app.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(30000) });
  if (res.body?.decision?.outcome !== 'REQUIRES_APPROVAL') throw new Error(res.text);
  return res.body.purchaseRequest.id;
}
const read = async (org: AppliedOrg, id: string) => (await app.request(`/v1/purchase-requests/${id}`, { key: org.keys['a-key'] })).body.purchase;
const answer = (id: string, verdict: 'APPROVE' | 'REJECT') => app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: verdict, person: 'ana' } });
const decisionKinds = async (id: string) => (await app.store.db.collection('decisions').find({ purchaseId: id }).toArray()).map((d: any) => d.kind).sort();
const eventTypes = async (id: string) => (await app.store.db.collection('events').find({ 'data.purchaseRequestId': id }).sort({ _id: 1 }).toArray()).map((e: any) => e.type);
const receiptsOf = (id: string) => app.store.db.collection('receipts').countDocuments({ purchaseId: id });

/** The archive's own transaction, committed, and nothing after it: what a process that stopped right then leaves. */
const archiveOnly = (org: AppliedOrg) =>
  runCommand(app.store, async (session) => {
    const agent = await app.deps.collections.agents.findOne({ _id: org.agents.a.id }, { session });
    return changeAgentStatus(app.deps, session, agent!, 'ARCHIVED', app.deps.now());
  });

test.serial('an answer after the archive committed, before its approvals were cancelled, is refused; the purchase is then cancelled', async (t) => {
  const org = await freshShop();
  const approving = await pending(org);
  const rejecting = await pending(org);
  await archiveOnly(org);

  for (const [id, verdict] of [[approving, 'APPROVE'], [rejecting, 'REJECT']] as const) {
    const res = await answer(id, verdict);
    t.is(res.status, 409, res.text);
    t.is(res.body.error.code, 'approval_not_pending');
    t.like(await read(org, id), { status: 'PENDING_APPROVAL', approval: { state: 'PENDING' } }, 'nothing changed');
  }

  t.is(await finishInterruptedArchives(app.deps), 2, 'the sweep finishes the archive');
  for (const id of [approving, rejecting]) {
    const done = await read(org, id);
    t.like(done, { status: 'CANCELLED', approval: { state: 'CANCELLED' }, decision: { kind: 'APPROVAL_CANCELLED' } });
    t.deepEqual(await decisionKinds(id), ['APPROVAL_CANCELLED', 'INITIAL'], 'cancelled, never decided by a person');
    t.deepEqual(await eventTypes(id), ['purchase.approval_required'], 'no purchase.approved or purchase.rejected');
    t.is(await receiptsOf(id), 1, 'the initial decision\'s receipt only');
    t.is((await windowOfPurchase(app.store.db, org.policies.main.id, id))!.heldMinor, 0);
  }
});

test.serial('an agent enabled again before the archive\'s cancellations reached its approval keeps it waiting, and it can be answered', async (t) => {
  const org = await freshShop();
  const id = await pending(org);
  const approvalId = String((await app.store.db.collection('approvals').findOne({ purchaseId: id }))!._id);
  await archiveOnly(org);
  const enabled = await app.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'ENABLED' } });
  t.is(enabled.status, 200);

  // The follow-up that read the agent ARCHIVED before it was enabled again reaches the approval now.
  t.false(await closeApproval(app.deps, approvalId, 'CANCELLED'));
  t.like(await read(org, id), { status: 'PENDING_APPROVAL', approval: { state: 'PENDING' }, agent: { status: 'ENABLED' } });
  t.is((await windowOfPurchase(app.store.db, org.policies.main.id, id))!.heldMinor, 30000, 'still held');
  t.is(await finishInterruptedArchives(app.deps), 0);

  const res = await answer(id, 'APPROVE');
  t.is(res.status, 200, res.text);
  t.is(res.body.purchase.status, 'APPROVED');
  const window = await windowOfPurchase(app.store.db, org.policies.main.id, id);
  t.like(window, { heldMinor: 0, committedMinor: 30000 });
});

test.serial('an approval past its expiry whose agent is archived before the expiry ran has expired, not been cancelled', async (t) => {
  const org = await freshShop();
  const id = await pending(org);
  const { expiresAt } = (await app.store.db.collection('approvals').findOne({ purchaseId: id }))!;
  clock = expiresAt.getTime(); // nobody answered by expiresAt; the expiry job has not run yet
  const archived = await app.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } });
  t.is(archived.status, 200);

  const done = await read(org, id);
  t.like(done, { status: 'EXPIRED', approval: { state: 'EXPIRED' }, decision: { kind: 'APPROVAL_EXPIRED' } });
  t.deepEqual(await eventTypes(id), ['purchase.approval_required', 'purchase.approval_expired']);
  t.is((await windowOfPurchase(app.store.db, org.policies.main.id, id))!.heldMinor, 0);
  t.is(await expireDueApprovals(app.deps), 0, 'nothing left for the expiry');
});

test.serial('disabling is not archiving: pending approvals keep waiting and their holds; approved while disabled they are rejected, once enabled again approved', async (t) => {
  const org = await freshShop();
  const whileDisabled = await pending(org);
  const afterwards = await pending(org);
  const disable = await app.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'DISABLED' } });
  t.is(disable.status, 200);
  for (const id of [whileDisabled, afterwards]) t.like(await read(org, id), { status: 'PENDING_APPROVAL', approval: { state: 'PENDING' }, agent: { status: 'DISABLED' } });
  t.is((await windowOfPurchase(app.store.db, org.policies.main.id, whileDisabled))!.heldMinor, 60000, 'both still held');

  const refused = await answer(whileDisabled, 'APPROVE');
  t.is(refused.status, 200, refused.text);
  t.like(refused.body.purchase, { status: 'REJECTED', decision: { kind: 'APPROVAL_REEVALUATION', outcome: 'REJECTED' } });
  t.true(refused.body.purchase.decision.reasonCodes.includes('AGENT_DISABLED'));

  t.is((await app.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'ENABLED' } })).status, 200);
  const approved = await answer(afterwards, 'APPROVE');
  t.is(approved.body.purchase.status, 'APPROVED', approved.text);
  t.like(await windowOfPurchase(app.store.db, org.policies.main.id, afterwards), { heldMinor: 0, committedMinor: 30000 });
});
