// Two answers to one approval interleaved the way two processes on MongoDB interleave them (issue #32):
// an answer whose state was read BEFORE another answer committed, and written after it. The embedded
// store runs one transaction at a time, so two live requests never interleave there; this test makes
// them: it reads one answer's state in a transaction of its own, lets the other answer commit through
// the operator API, then hands the stale state to the one handler (handlePurchaseCommand) as the first
// attempt's load. The record writer must refuse that record (the approval, and the purchase, at the
// versions read) so that the handler runs the command again on what the other answer wrote. Without
// the version filters these tests fail: an answer is lost below the quorum, or a second decision commits.
// The last test interleaves an answer and an expiry (whose process's clock is past expiresAt) the same way:
// the live test of that race (lifecycle.test.ts) runs both in one process, whose mailbox serialises them.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { quorumManifest } from '../helpers/quorum.ts';
import { windowOfPurchase } from '../helpers/windows.ts';
import { newId } from '../../src/ids.ts';
import { ApiError } from '../../src/http/errors.ts';
import { handlePurchaseCommand } from '../../src/purchases/handler.ts';
import { loadPurchaseState } from '../../src/purchases/load.ts';
import type { PurchaseCommand, PurchaseState } from '../../src/purchases/lifecycle.ts';
import type { AppDeps } from '../../src/app-deps.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

let orgs = 0;
const quorumOrg = () => applyManifest(app, quorumManifest(`interleave-${++orgs}`));

async function submit(org: AppliedOrg, amountMinor: number): Promise<string> {
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: String(amountMinor), reason: 'A big order' } });
  if (res.status !== 201 || res.body.decision.outcome !== 'REQUIRES_APPROVAL') throw new Error(res.text);
  return res.body.purchaseRequest.id;
}
const answer = (id: string, person: string) => app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person } });
const read = async (org: AppliedOrg, id: string) => (await app.request(`/v1/purchase-requests/${id}`, { key: org.keys['buyer-key'] })).body.purchase;
const decisionKinds = async (id: string) => (await app.store.db.collection('decisions').find({ purchaseId: id }).toArray()).map((d: any) => d.kind).sort();
const approvedEvents = (id: string) => app.store.db.collection('events').countDocuments({ type: 'purchase.approved', 'data.purchaseRequestId': id });

/** The state `person`'s answer reads now, in a transaction of its own (as another process would read it). */
const readNow = (id: string, person: string) => app.store.withTransaction((session) => loadPurchaseState(app.deps, session, id, app.deps.now(), { answeredBy: person }));

/** Runs `command` with the state read earlier as the first attempt's, and a fresh read on any retry. */
function runWithStale(deps: AppDeps, org: AppliedOrg, id: string, answeredBy: string | null, stale: PurchaseState, command: PurchaseCommand) {
  const loads: Array<'stale' | 'fresh'> = [];
  const run = handlePurchaseCommand(
    deps,
    org.organizationId,
    async (session, now) => {
      if (loads.length === 0) {
        loads.push('stale');
        return stale;
      }
      loads.push('fresh');
      return loadPurchaseState(deps, session, id, now, { answeredBy });
    },
    command,
  );
  return { run, loads };
}

/** `person` approves with the state read earlier as the first attempt's, and a fresh read on any retry. */
const approveWithStale = (org: AppliedOrg, id: string, person: string, stale: PurchaseState) =>
  runWithStale(app.deps, org, id, person, stale, { kind: 'ANSWER', ids: { decisionId: newId() }, answer: 'APPROVE', personHandle: person, comment: null });

test('below the quorum: an approval read before another committed is run again, so neither answer is lost and the second decides', async (t) => {
  const org = await quorumOrg();
  const id = await submit(org, 30000); // two approvers
  const stale = await readNow(id, 'ana');
  t.deepEqual(stale.approval!.answers, []);

  // Bob's approval commits between Ana's read and Ana's write.
  const bob = await answer(id, 'bob');
  t.is(bob.status, 200, bob.text);
  t.is(bob.body.purchase.status, 'PENDING_APPROVAL');

  const { run, loads } = await approveWithStale(org, id, 'ana', stale);
  const outcome = await run;
  t.deepEqual(loads, ['stale', 'fresh'], 'the stale record was refused and the command run again');
  t.is(outcome.kind, 'ANSWERED', 'on what Bob wrote, Ana\'s approval is the second: it decides');
  const done = await read(org, id);
  t.is(done.status, 'APPROVED');
  t.deepEqual(done.approval.answers.map((a: any) => a.name), ['Bob Approver', 'Ana Approver'], 'Bob\'s answer was not overwritten');
  t.deepEqual(await decisionKinds(id), ['APPROVAL_REEVALUATION', 'INITIAL']);
  t.is(await approvedEvents(id), 1);
});

test('below the quorum: the same person answering twice at once counts once', async (t) => {
  const org = await quorumOrg();
  const id = await submit(org, 150000); // three approvers
  const stale = await readNow(id, 'ana');
  t.is((await answer(id, 'ana')).status, 200);
  t.is((await answer(id, 'bob')).status, 200);

  const { run, loads } = await approveWithStale(org, id, 'ana', stale);
  const error = await t.throwsAsync(run, { instanceOf: ApiError });
  t.is(error!.code, 'approval_already_answered_by_person');
  t.deepEqual(loads, ['stale', 'fresh']);
  const pending = await read(org, id);
  t.is(pending.status, 'PENDING_APPROVAL');
  t.deepEqual(pending.approval.answers.map((a: any) => a.name), ['Ana Approver', 'Bob Approver'], 'Ana once, and Bob\'s answer kept');
  t.deepEqual(await decisionKinds(id), ['INITIAL']);
});

test('below the quorum: one human answering under two person records (one email) at once counts once', async (t) => {
  // Each record read the approval before either answer committed: the one written second is refused at
  // the version it read, and on a fresh read it finds the first record's answer, which is the same human's.
  const handle = `interleave-${++orgs}`;
  const manifest = quorumManifest(handle);
  manifest.people.push({ handle: 'ana-again', name: 'Ana (finance)', email: `ANA@${handle}.example` });
  const org = await applyManifest(app, manifest);
  const id = await submit(org, 30000); // two approvers
  const stale = await readNow(id, 'ana-again');
  t.deepEqual(stale.approval!.answers, []);
  const first = await answer(id, 'ana');
  t.is(first.status, 200, first.text);
  t.is(first.body.purchase.status, 'PENDING_APPROVAL');

  const { run, loads } = await approveWithStale(org, id, 'ana-again', stale);
  const error = await t.throwsAsync(run, { instanceOf: ApiError });
  t.is(error!.code, 'approval_already_answered_by_person');
  t.deepEqual(loads, ['stale', 'fresh']);
  const pending = await read(org, id);
  t.is(pending.status, 'PENDING_APPROVAL', 'one human did not meet a two-person rule');
  t.deepEqual(pending.approval.answers.map((a: any) => a.name), ['Ana Approver']);
  t.deepEqual(await decisionKinds(id), ['INITIAL']);
});

test('at the quorum: the same person reaching it twice at once makes one decision', async (t) => {
  const org = await quorumOrg();
  const id = await submit(org, 30000); // two approvers
  t.is((await answer(id, 'cyd')).status, 200);
  const stale = await readNow(id, 'ana');
  t.is(stale.approval!.answers!.length, 1, 'read with one approval in: Ana\'s would reach the quorum');
  const ana = await answer(id, 'ana');
  t.is(ana.status, 200);
  t.is(ana.body.purchase.status, 'APPROVED');

  const { run, loads } = await approveWithStale(org, id, 'ana', stale);
  const error = await t.throwsAsync(run, { instanceOf: ApiError });
  t.is(error!.code, 'approval_not_pending');
  t.deepEqual(loads, ['stale', 'fresh']);
  t.deepEqual(await decisionKinds(id), ['APPROVAL_REEVALUATION', 'INITIAL'], 'one decision');
  t.is(await approvedEvents(id), 1, 'one purchase.approved');
  const done = await read(org, id);
  t.deepEqual(done.approval.answers.map((a: any) => a.name), ['Cyd Approver', 'Ana Approver']);
  const window: any = await windowOfPurchase(app.store.db, org.policies['two-person'].id, id);
  t.is(window.committedMinor, 30000, 'the amount is spent once');
  t.is(window.heldMinor, 0);
});

test('an expiry read before the deciding answer committed is run again and changes nothing; an answer read before an expiry committed is refused', async (t) => {
  const org = await quorumOrg();
  const expiry = async (id: string) => {
    const approval = await app.store.db.collection('approvals').findOne({ purchaseId: id });
    // The expiry's process, its clock past expiresAt.
    const late = { ...app.deps, now: () => new Date(approval!.expiresAt.getTime() + 1) };
    const state = await app.store.withTransaction((session) => loadPurchaseState(late, session, id, late.now(), { answeredBy: null }));
    return { late, state };
  };
  const dayWindow = (id: string): Promise<any> => windowOfPurchase(app.store.db, org.policies['two-person'].id, id);

  const answered = await submit(org, 30000); // two approvers
  t.is((await answer(answered, 'ana')).status, 200);
  const stale = await expiry(answered);
  t.is((await answer(answered, 'bob')).body.purchase.status, 'APPROVED');
  const expire = runWithStale(stale.late, org, answered, null, stale.state, { kind: 'EXPIRE', ids: { decisionId: newId() } });
  t.is((await expire.run).kind, 'UNCHANGED', 'on what the answer wrote, nothing is left to expire');
  t.deepEqual(expire.loads, ['stale', 'fresh']);
  t.deepEqual(await decisionKinds(answered), ['APPROVAL_REEVALUATION', 'INITIAL']);
  t.like(await dayWindow(answered), { heldMinor: 0, committedMinor: 30000 });

  const expired = await submit(org, 30000);
  t.is((await answer(expired, 'ana')).status, 200);
  const staleAnswer = await readNow(expired, 'bob');
  const { late } = await expiry(expired);
  const spentBefore = (await dayWindow(expired)).committedMinor;
  t.is((await handlePurchaseCommand(late, org.organizationId, (session, now) => loadPurchaseState(late, session, expired, now, { answeredBy: null }), { kind: 'EXPIRE', ids: { decisionId: newId() } })).kind, 'CLOSED');
  const { run, loads } = approveWithStale(org, expired, 'bob', staleAnswer);
  const error = await t.throwsAsync(run, { instanceOf: ApiError });
  t.is(error!.code, 'approval_not_pending');
  t.deepEqual(loads, ['stale', 'fresh']);
  t.deepEqual(await decisionKinds(expired), ['APPROVAL_EXPIRED', 'INITIAL']);
  t.is(await approvedEvents(expired), 0);
  t.like(await dayWindow(expired), { heldMinor: 0, committedMinor: spentBefore }, 'released, not spent');
});
