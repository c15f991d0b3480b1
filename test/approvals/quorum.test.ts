// Quorum approvals (issue #32) through the operator API, with real Agenda jobs delivering webhooks to
// a recording sender: a rule asks for two (or three) distinct approvers, each person counts once, one
// rejection ends it, the approval that reaches the quorum decides once; the largest approvalsRequired
// of the escalating rules wins, in decisions and in simulations; manifests are checked.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { quorumManifest } from '../helpers/quorum.ts';
import { windowOfPurchase, windowTotals } from '../helpers/windows.ts';
import { configureWebhooks } from '../../src/webhooks/runtime.ts';
import { dispatchEvents } from '../../src/webhooks/dispatch.ts';
import type { AttemptResult, SendInput } from '../../src/webhooks/send.ts';
import type { LookupFn } from '../../src/webhooks/destination.ts';
import { expireApproval } from '../../src/approvals/close.ts';

const HOOKS = 'hooks.quorum-test.com';
const sent: Array<{ path: string; body: any }> = [];
const fakeSend = async (input: SendInput): Promise<AttemptResult> => {
  sent.push({ path: input.url.pathname, body: JSON.parse(Buffer.from(input.body).toString('utf8')) });
  return { verdict: 'SUCCESS', statusCode: 200, durationMs: 1, errorClass: null, responseSnippet: null, errorDetail: null };
};
const lookup: LookupFn = async (hostname) => {
  if (hostname !== HOOKS) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
  return [{ address: '93.184.215.14', family: 4 }];
};

let app: TestApp;
test.before(async () => {
  app = await startApp({ env: { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex') }, jobs: { sweepEvery: '1 second' } });
  configureWebhooks(app.deps, { send: fakeSend, lookup });
});
test.after.always(() => app?.close());

let orgs = 0;
async function quorumOrg(): Promise<AppliedOrg & { hookPath: string }> {
  const org = await applyManifest(app, quorumManifest(`quorum-${++orgs}`));
  const hookPath = `/hook-${orgs}`;
  const hook = await app.request('/v1/webhooks', { key: org.keys['admin-key'], body: { url: `https://${HOOKS}${hookPath}`, subscribedTypes: ['purchase.approved', 'purchase.rejected'] } });
  if (hook.status !== 201) throw new Error(hook.text);
  return { ...org, hookPath };
}

const submit = async (key: string, amountMinor: number) => {
  const res = await app.request('/v1/purchase-requests', { key, body: { merchant: 'Paper Co', amountMinor: String(amountMinor), reason: 'A big order' } });
  if (res.status !== 201) throw new Error(res.text);
  return res.body;
};
const read = async (key: string, id: string) => (await app.request(`/v1/purchase-requests/${id}`, { key })).body.purchase;
const answer = (id: string, person: string, verdict: 'APPROVE' | 'REJECT' = 'APPROVE', comment: string | null = null) =>
  app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: verdict, person, comment } });
/** The DAY window the purchase counts toward (the day it was requested in, in Berlin): a run across midnight has two. */
const dayWindow = (org: AppliedOrg, id: string) => windowOfPurchase(app.store.db, org.policies['two-person'].id, id);
/** Every DAY window of the policy, added up: the purchases of a run across midnight land in two. */
const dayTotals = (org: AppliedOrg) => windowTotals(app.store.db, { policyId: org.policies['two-person'].id });
const decisionsOf = (id: string) => app.store.db.collection('decisions').find({ purchaseId: id }).sort({ _id: 1 }).toArray();
const eventsOf = (id: string) => app.store.db.collection('events').find({ 'data.purchaseRequestId': id }).sort({ _id: 1 }).toArray();

async function webhooksFor(path: string, id: string, type: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    await dispatchEvents(app.deps);
    const got = sent.filter((s) => s.path === path && s.body.data?.purchaseRequestId === id && s.body.type === type);
    if (got.length > 0 || Date.now() > deadline) return got;
    await sleep(100);
  }
}

test('approvalsRequired 2: one approval leaves it pending, the same person is refused, the second approver decides once', async (t) => {
  const org = await quorumOrg();
  const key = org.keys['buyer-key'];
  const id = (await submit(key, 30000)).purchaseRequest.id;
  const asked = await read(key, id);
  t.like(asked.approval, { state: 'PENDING', approvalsRequired: 2, answers: [] });

  const first = await answer(id, 'ana', 'APPROVE', 'Fine by me');
  t.is(first.status, 200, first.text);
  t.is(first.body.purchase.status, 'PENDING_APPROVAL');
  const pending = await read(key, id);
  t.is(pending.status, 'PENDING_APPROVAL');
  t.is(pending.resolvedAt, null);
  t.like(pending.decision, { kind: 'INITIAL', outcome: 'REQUIRES_APPROVAL' });
  t.like(pending.approval, { state: 'PENDING', isPending: true, resolvedBy: null, approvalsRequired: 2 });
  t.is(pending.approval.answers.length, 1);
  t.like(pending.approval.answers[0], { name: 'Ana Approver', answer: 'APPROVE', comment: 'Fine by me' });
  t.regex(pending.approval.answers[0].answeredAt, /^\d{4}-\d\d-\d\dT/);
  t.deepEqual(first.body.purchase, pending, 'the answer returns the purchase as it now reads');
  t.is((await dayWindow(org, id))!.heldMinor, 30000, 'the budget stays held');
  t.is((await decisionsOf(id)).length, 1, 'no decision below the quorum');
  t.deepEqual((await eventsOf(id)).map((e: any) => e.type), ['purchase.approval_required'], 'no event below the quorum');

  for (const verdict of ['APPROVE', 'REJECT'] as const) {
    const again = await answer(id, 'ana', verdict);
    t.is(again.status, 409);
    t.is(again.body.error.code, 'approval_already_answered_by_person');
  }
  t.deepEqual(await read(key, id), pending, 'a refused answer changes nothing');

  const second = await answer(id, 'bob', 'APPROVE', 'Agreed');
  t.is(second.status, 200, second.text);
  const done = await read(key, id);
  t.is(done.status, 'APPROVED');
  t.like(done.decision, { kind: 'APPROVAL_REEVALUATION', outcome: 'APPROVED' });
  t.like(done.approval, { state: 'APPROVED', isPending: false, resolvedBy: { name: 'Bob Approver' }, comment: 'Agreed', approvalsRequired: 2 });
  t.deepEqual(
    done.approval.answers.map((a: any) => [a.name, a.answer, a.comment]),
    [
      ['Ana Approver', 'APPROVE', 'Fine by me'],
      ['Bob Approver', 'APPROVE', 'Agreed'],
    ],
  );
  const window = (await dayWindow(org, id))!;
  t.is(window.heldMinor, 0);
  t.is(window.committedMinor, 30000);
  t.deepEqual((await decisionsOf(id)).map((d: any) => d.kind), ['INITIAL', 'APPROVAL_REEVALUATION']);
  t.deepEqual((await eventsOf(id)).map((e: any) => e.type), ['purchase.approval_required', 'purchase.approved']);
  const hooks = await webhooksFor(org.hookPath, id, 'purchase.approved');
  t.is(hooks.length, 1, 'exactly one purchase.approved webhook');
  t.is(hooks[0].body.data.resolvedBy, 'HUMAN');

  const third = await answer(id, 'cyd');
  t.is(third.status, 409);
  t.is(third.body.error.code, 'approval_not_pending');
  t.deepEqual(await read(key, id), done);
});

test('one rejection ends a quorum at once, after an approval or before any', async (t) => {
  const org = await quorumOrg();
  const key = org.keys['buyer-key'];
  const id = (await submit(key, 30000)).purchaseRequest.id;
  t.is((await answer(id, 'ana')).status, 200);
  const rejected = await answer(id, 'bob', 'REJECT', 'Not this month');
  t.is(rejected.status, 200);
  const done = await read(key, id);
  t.is(done.status, 'REJECTED');
  t.like(done.decision, { kind: 'APPROVAL_REEVALUATION', outcome: 'REJECTED' });
  t.like(done.approval, { state: 'REJECTED', resolvedBy: { name: 'Bob Approver' }, comment: 'Not this month' });
  t.deepEqual(done.approval.answers.map((a: any) => a.answer), ['APPROVE', 'REJECT']);
  t.is((await dayWindow(org, id))!.heldMinor, 0, 'the hold is released');
  t.is((await webhooksFor(org.hookPath, id, 'purchase.rejected')).length, 1);
  t.is((await answer(id, 'cyd')).body.error.code, 'approval_not_pending');

  const other = (await submit(key, 30000)).purchaseRequest.id;
  t.is((await answer(other, 'cyd', 'REJECT')).status, 200);
  t.is((await read(key, other)).status, 'REJECTED');
});

test('a single-approver rule still resolves on one approval', async (t) => {
  const org = await quorumOrg();
  const key = org.keys['solo-key'];
  const id = (await submit(key, 30000)).purchaseRequest.id;
  t.like((await read(key, id)).approval, { approvalsRequired: 1, answers: [] });
  const res = await answer(id, 'ana');
  t.is(res.status, 200);
  const done = await read(key, id);
  t.is(done.status, 'APPROVED');
  t.like(done.decision, { kind: 'APPROVAL_REEVALUATION', outcome: 'APPROVED' });
  t.is(done.approval.answers.length, 1);
  t.is((await webhooksFor(org.hookPath, id, 'purchase.approved')).length, 1);
});

test('the largest approvalsRequired of the escalating rules is asked for, and simulations report it', async (t) => {
  const org = await quorumOrg();
  const key = org.keys['buyer-key'];
  const big = (await submit(key, 150000)).purchaseRequest.id;
  t.is((await read(key, big)).approval.approvalsRequired, 3, 'both rules escalate: the larger quorum');
  t.is((await answer(big, 'ana')).body.purchase.status, 'PENDING_APPROVAL');
  t.is((await answer(big, 'bob')).body.purchase.status, 'PENDING_APPROVAL');
  t.is((await answer(big, 'cyd')).body.purchase.status, 'APPROVED');

  const simulate = (amountMinor: string) =>
    app.request('/v1/simulations/current-policies', { key: org.keys['admin-key'], body: { agentId: org.agents.buyer.id, merchant: 'Paper Co', amountMinor, reason: 'what if' } });
  const asks = async (amountMinor: string) => (await simulate(amountMinor)).body.simulatedDecision;
  t.like(await asks('1000'), { wouldRequireApproval: false, approvalsRequired: 0 });
  t.like(await asks('30000'), { wouldRequireApproval: true, approvalsRequired: 2 });
  t.like(await asks('150000'), { wouldRequireApproval: true, approvalsRequired: 3 });
  t.like(await asks('600000'), { outcome: 'REJECTED', approvalsRequired: 0 });
});

test('a person without the approver role does not count towards the quorum', async (t) => {
  const org = await quorumOrg();
  const key = org.keys['buyer-key'];
  const id = (await submit(key, 30000)).purchaseRequest.id;
  const res = await answer(id, 'vic');
  t.is(res.status, 403);
  t.is(res.body.error.code, 'person_not_approver');
  t.deepEqual((await read(key, id)).approval.answers, []);
});

test('manifests: approvalsRequired is 1..5 on REQUIRE_APPROVAL rules, shown on policy versions, and part of what makes a version new', async (t) => {
  const handle = `quorum-manifest-${++orgs}`;
  const manifest: any = quorumManifest(handle);
  const org = await applyManifest(app, manifest);
  const versionOf = async (policy: string) => {
    const p = org.policies[policy];
    const res = await app.request(`/v1/policies/${p.id}`, { key: org.keys['admin-key'] });
    const active = res.body.policy.activeVersion ?? res.body.policy.versions.at(-1);
    return (await app.request(`/v1/policies/${p.id}/versions/${active.id}`, { key: org.keys['admin-key'] })).body.version;
  };
  const rules = (await versionOf('two-person')).rules;
  t.deepEqual(
    rules.map((r: any) => [r.effect, r.amountMinor, r.approvalsRequired]),
    [
      ['REQUIRE_APPROVAL', '20000', 2],
      ['REQUIRE_APPROVAL', '100000', 3],
      ['BLOCK', '500000', undefined],
      ['BLOCK', '10000000', undefined],
    ],
  );
  t.deepEqual((await versionOf('one-person')).rules.map((r: any) => r.approvalsRequired), [1], 'the default is shown');

  const again = await app.admin('/admin/manifests', { body: manifest });
  t.is(again.body.policies['two-person'].activeVersionId, org.policies['two-person'].activeVersionId, 'the same manifest again is the same version');
  const explicitOne = structuredClone(manifest);
  explicitOne.policies[1].rules[0].approvalsRequired = 1;
  t.is((await app.admin('/admin/manifests', { body: explicitOne })).body.policies['one-person'].activeVersionId, org.policies['one-person'].activeVersionId, 'an explicit 1 is the default');
  const changed = structuredClone(manifest);
  changed.policies[0].rules[0].approvalsRequired = 4;
  changed.policies[0].activate = true;
  const applied = await app.admin('/admin/manifests', { body: changed });
  t.not(applied.body.policies['two-person'].activeVersionId, org.policies['two-person'].activeVersionId, 'another quorum is another version');

  const refused = async (mutate: (m: any) => void) => {
    const m = structuredClone(manifest);
    mutate(m);
    const res = await app.admin('/admin/manifests', { body: m });
    t.is(res.status, 400, res.text);
    return res.body.error.issues as Array<{ path: string; code: string }>;
  };
  const onBlock = await refused((m) => (m.policies[0].rules[2].approvalsRequired = 2));
  t.like(onBlock.find((i) => i.path === 'policies.0.rules.2.approvalsRequired'), { code: 'APPROVALS_REQUIRED_NOT_PERMITTED' });
  for (const bad of [0, 6, 1.5, '2']) {
    const issues = await refused((m) => (m.policies[0].rules[0].approvalsRequired = bad));
    t.true(issues.some((i) => i.path.startsWith('policies.0.rules.0.approvalsRequired')), JSON.stringify(issues));
  }
});

test('two instances on one store answering at the same moment: one decision, each person counted once (100 trials)', async (t) => {
  // Another instance of the service on the same store: its own mailboxes, so the answers race in the store.
  const second = await startApp({ store: app.store });
  t.teardown(() => second.close());
  const org = await quorumOrg();
  const key = org.keys['buyer-key'];
  const ids: string[] = [];
  for (let i = 0; i < 100; i++) ids.push((await submit(key, 30000)).purchaseRequest.id);
  const on = (instance: TestApp, id: string, person: string) => instance.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person } });
  for (let batch = 0; batch < 10; batch++) {
    const trials = await Promise.all(ids.slice(batch * 10, batch * 10 + 10).map((id) => Promise.all([on(app, id, 'ana'), on(second, id, 'bob'), on(second, id, 'ana')])));
    for (const [anaOne, bob, anaTwo] of trials) {
      t.is(bob.status, 200, bob.text);
      t.deepEqual([anaOne.status, anaTwo.status].sort(), [200, 409]);
    }
  }
  for (const id of ids) {
    t.deepEqual((await decisionsOf(id)).map((d: any) => d.kind).sort(), ['APPROVAL_REEVALUATION', 'INITIAL']);
    const done = await read(key, id);
    t.is(done.status, 'APPROVED');
    t.deepEqual(done.approval.answers.map((a: any) => a.name).sort(), ['Ana Approver', 'Bob Approver']);
  }
  const window = await dayTotals(org);
  t.is(window.heldMinor, 0);
  t.is(window.committedMinor, 30000 * 100);
});

test('two person records with one email are one person: the second answers as the first already did', async (t) => {
  // A manifest may list one person twice under two handles (a renamed handle, a second role): one
  // human, who signs in with the one email. Counting both would let one person meet a two-person rule.
  const handle = `quorum-${++orgs}`;
  const manifest: any = quorumManifest(handle);
  manifest.people.push({ handle: 'ana-again', name: 'Ana (finance)', email: `ANA@${handle}.example` });
  const org = await applyManifest(app, manifest);
  const key = org.keys['buyer-key'];
  const id = (await submit(key, 30000)).purchaseRequest.id;
  t.is((await answer(id, 'ana')).body.purchase.status, 'PENDING_APPROVAL');
  for (const verdict of ['APPROVE', 'REJECT'] as const) {
    const twice = await answer(id, 'ana-again', verdict);
    t.is(twice.status, 409, twice.text);
    t.is(twice.body.error.code, 'approval_already_answered_by_person');
  }
  const pending = await read(key, id);
  t.is(pending.status, 'PENDING_APPROVAL');
  t.deepEqual(pending.approval.answers.map((a: any) => a.name), ['Ana Approver']);
  t.is((await answer(id, 'bob')).body.purchase.status, 'APPROVED', 'another person meets the rule');
});

test('after one of two approvals, expiry, archive and a policy change end the purchase as they do with one approver', async (t) => {
  const org = await quorumOrg();
  const key = org.keys['buyer-key'];
  const kinds = async (id: string) => (await decisionsOf(id)).map((d: any) => d.kind);

  const expiring = (await submit(key, 30000)).purchaseRequest.id;
  t.is((await answer(expiring, 'ana')).body.purchase.status, 'PENDING_APPROVAL');
  const approval = await app.store.db.collection('approvals').findOne({ purchaseId: expiring });
  t.true(await expireApproval({ ...app.deps, now: () => new Date(approval!.expiresAt.getTime() + 1) }, String(approval!._id)));
  const expired = await read(key, expiring);
  t.is(expired.status, 'EXPIRED');
  t.like(expired.approval, { state: 'EXPIRED', approvalsRequired: 2 });
  t.deepEqual(expired.approval.answers.map((a: any) => a.name), ['Ana Approver'], 'the answer given stays on record');
  t.deepEqual(await kinds(expiring), ['INITIAL', 'APPROVAL_EXPIRED']);
  t.is((await answer(expiring, 'bob')).body.error.code, 'approval_not_pending');

  // A new version of the escalating policy while one approval is in: the second approval re-evaluates
  // against it and refuses, as a single approval does.
  const changing = (await submit(key, 30000)).purchaseRequest.id;
  t.is((await answer(changing, 'ana')).status, 200);
  const manifest: any = quorumManifest(org.result.organization.handle);
  manifest.policies[0].rules[0].amountMinor = '25000';
  manifest.policies[0].activate = true;
  t.is((await app.admin('/admin/manifests', { body: manifest })).status, 200);
  const second = await answer(changing, 'bob');
  t.is(second.status, 200, second.text);
  t.is(second.body.purchase.status, 'REJECTED');
  t.true(second.body.purchase.decision.reasonCodes.includes('POLICY_CHANGED_SINCE_ESCALATION'));
  t.deepEqual(await kinds(changing), ['INITIAL', 'APPROVAL_REEVALUATION']);
  t.is((await webhooksFor(org.hookPath, changing, 'purchase.rejected')).length, 1);

  const archived = (await submit(key, 30000)).purchaseRequest.id;
  t.is((await answer(archived, 'ana')).status, 200);
  t.is((await app.admin(`/admin/agents/${org.agents.buyer.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } })).status, 200);
  const cancelled = await read(key, archived);
  t.is(cancelled.status, 'CANCELLED');
  t.like(cancelled.approval, { state: 'CANCELLED' });
  t.deepEqual(await kinds(archived), ['INITIAL', 'APPROVAL_CANCELLED']);
  const window = await dayTotals(org);
  t.true(window.windows >= 1, 'the purchases were held in a window');
  t.is(window.heldMinor, 0, 'every hold released');
  t.is(window.committedMinor, 0);
});
