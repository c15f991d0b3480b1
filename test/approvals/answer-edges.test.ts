// Answers at the edges, as an approver and as someone gaming the rules would try them, through the
// operator API on a clock the test sets: an answer at exactly expiresAt, answers fired at once from
// several approvers (a rejection racing the approval that reaches the quorum), an approver who loses the
// role between two answers. After each, the budget windows count what the recorded purchases say.
import test from 'ava';
import type { TestApp } from '../helpers/app.ts';
import { Client, PASSWORD, startDashboardApp } from '../helpers/dashboard.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { quorumManifest } from '../helpers/quorum.ts';
import { expireDueApprovals } from '../../src/approvals/close.ts';

let clock = new Date('2026-11-29T09:00:00.000Z');
let app: TestApp;
test.before(async () => {
  app = await startDashboardApp({ now: () => clock });
});
test.after.always(() => app?.close());

let orgs = 0;
const quorumOrg = (edit: (m: ReturnType<typeof quorumManifest>) => void = () => {}) => {
  const manifest = quorumManifest(`edges-${++orgs}`);
  edit(manifest);
  return applyManifest(app, manifest);
};

async function submit(org: AppliedOrg, amountMinor: number, key = 'buyer-key'): Promise<string> {
  const res = await app.request('/v1/purchase-requests', { key: org.keys[key], body: { merchant: 'Paper Co', amountMinor: String(amountMinor), reason: 'A big order' } });
  if (res.status !== 201 || res.body.decision.outcome !== 'REQUIRES_APPROVAL') throw new Error(res.text);
  return res.body.purchaseRequest.id;
}
const answer = (id: string, person: string, verdict: 'APPROVE' | 'REJECT' = 'APPROVE') =>
  app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: verdict, person } });
const read = async (org: AppliedOrg, id: string) => (await app.request(`/v1/purchase-requests/${id}`, { key: org.keys['buyer-key'] })).body.purchase;
const decisionsOf = async (id: string) => (await app.store.db.collection('decisions').find({ purchaseId: id }).toArray()).map((d: any) => d.kind).sort();

/** The two-person policy's windows against its purchases: held = what waits, committed = what was approved. */
async function countersAgree(t: any, org: AppliedOrg) {
  const policyId = org.policies['two-person'].id;
  const purchases = await app.store.db.collection('purchases').find({ organizationId: org.organizationId, agentId: org.agents.buyer.id }).toArray();
  const sum = (status: string) => purchases.filter((p: any) => p.status === status).reduce((s: number, p: any) => s + Number(p.amountMinor), 0);
  const windows = await app.store.db.collection('budget_windows').find({ policyId, periodKind: 'DAY' }).toArray();
  const total = (field: string) => windows.reduce((s: number, w: any) => s + Number(w[field]), 0);
  t.deepEqual({ held: total('heldMinor'), committed: total('committedMinor') }, { held: sum('PENDING_APPROVAL'), committed: sum('APPROVED') }, 'the windows count what the purchases say');
}

test.serial('an answer at exactly expiresAt is refused and changes nothing; a millisecond before, it counts', async (t) => {
  const org = await quorumOrg();
  clock = new Date('2026-11-29T09:00:00.000Z');
  const late = await submit(org, 30000);
  const onTime = await submit(org, 30000);
  const expiresAt = new Date((await read(org, late)).approval.expiresAt);
  t.is(expiresAt.toISOString(), '2026-11-29T10:00:00.000Z', 'PT1H after the request, in UTC');

  clock = new Date(expiresAt.getTime() - 1);
  t.is((await answer(onTime, 'ana')).status, 200);
  t.is((await answer(onTime, 'bob')).body.purchase.status, 'APPROVED');

  clock = expiresAt;
  const refused = await answer(late, 'ana');
  t.is(refused.status, 409);
  t.is(refused.body.error.code, 'approval_not_pending');
  t.deepEqual((await read(org, late)).approval.answers, [], 'the refused answer is not recorded');
  await countersAgree(t, org);
  t.is(await expireDueApprovals(app.deps), 1, 'at expiresAt, the expiry wins');
  t.is((await read(org, late)).status, 'EXPIRED');
  t.is((await read(org, onTime)).status, 'APPROVED');
  await countersAgree(t, org);
});

test.serial('a rejection racing the approval that reaches the quorum: one decision, and the budget agrees with it (20 trials)', async (t) => {
  const org = await quorumOrg();
  const outcomes = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const id = await submit(org, 30000);
    t.is((await answer(id, 'cyd')).status, 200);
    const [approve, reject] = await Promise.all([answer(id, 'ana'), answer(id, 'bob', 'REJECT')]);
    const statuses = [approve.status, reject.status].sort();
    t.deepEqual(statuses, [200, 409], `${approve.text} ${reject.text}`);
    const loser = approve.status === 409 ? approve : reject;
    t.is(loser.body.error.code, 'approval_not_pending');
    const done = await read(org, id);
    outcomes.add(done.status);
    t.is(done.status, approve.status === 200 ? 'APPROVED' : 'REJECTED');
    t.deepEqual(await decisionsOf(id), ['APPROVAL_REEVALUATION', 'INITIAL']);
    t.is(done.approval.answers.length, 2);
  }
  await countersAgree(t, org);
  t.log('outcomes seen', [...outcomes]);
});

test.serial('three approvers at once on a two-person rule: two answers count, the third is refused, one decision', async (t) => {
  const org = await quorumOrg();
  for (let i = 0; i < 10; i++) {
    const id = await submit(org, 30000);
    const answers = await Promise.all(['ana', 'bob', 'cyd'].map((p) => answer(id, p)));
    t.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 409]);
    const done = await read(org, id);
    t.is(done.status, 'APPROVED');
    t.is(done.approval.answers.length, 2);
    t.deepEqual(await decisionsOf(id), ['APPROVAL_REEVALUATION', 'INITIAL']);
  }
  await countersAgree(t, org);
});

test.serial('an archive racing answers: the purchase is cancelled or decided, once, and its hold is released or spent once', async (t) => {
  for (let i = 0; i < 5; i++) {
    const org = await quorumOrg();
    const ids = [await submit(org, 30000), await submit(org, 30000), await submit(org, 30000)];
    for (const id of ids) t.is((await answer(id, 'cyd')).status, 200);
    const archive = app.admin(`/admin/agents/${org.agents.buyer.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } });
    const answered = await Promise.all(ids.map((id) => answer(id, 'ana')));
    t.is((await archive).status, 200);
    for (const [j, id] of ids.entries()) {
      const p = await read(org, id);
      t.is(p.status, answered[j].status === 200 ? 'APPROVED' : 'CANCELLED', answered[j].text);
    }
    await countersAgree(t, org);
  }
});

test.serial('an approver who loses the role after answering: their approval was given as an approver and still counts', async (t) => {
  const handle = `edges-${++orgs}`;
  const manifest = quorumManifest(handle);
  const org = await applyManifest(app, manifest);
  const id = await submit(org, 30000);
  t.is((await answer(id, 'ana')).status, 200);
  manifest.people[0] = { ...manifest.people[0], roles: ['viewer'] } as never;
  await applyManifest(app, manifest);
  const again = await answer(id, 'ana');
  t.is(again.status, 403);
  t.is(again.body.error.code, 'person_not_approver');
  const bob = await answer(id, 'bob');
  t.is(bob.body.purchase.status, 'APPROVED');
  await countersAgree(t, org);
});

test.serial('the same person on the dashboard and the operator API, and twice at once on the dashboard, counts once', async (t) => {
  const org = await quorumOrg();
  const ana = org.result.people.ana.id;
  t.is((await app.admin(`/admin/people/${ana}/password`, { method: 'PUT', body: { password: PASSWORD } })).status, 200);
  const client = new Client(app.url);
  await client.signIn(`ana@edges-${orgs}.example`);
  const csrf = await client.csrf();

  const first = await submit(org, 30000);
  t.is((await client.post(`/dashboard/approvals/${first}/answer`, { answer: 'APPROVE', csrf })).status, 303);
  const viaApi = await answer(first, 'ana');
  t.is(viaApi.status, 409);
  t.is(viaApi.body.error.code, 'approval_already_answered_by_person');

  const second = await submit(org, 30000);
  t.is((await answer(second, 'ana')).status, 200);
  const viaDashboard = await client.post(`/dashboard/approvals/${second}/answer`, { answer: 'REJECT', csrf });
  t.is(viaDashboard.status, 409);
  t.regex(viaDashboard.text, /already answered this approval/);

  const third = await submit(org, 30000);
  const clicks = await Promise.all([1, 2, 3].map(() => client.post(`/dashboard/approvals/${third}/answer`, { answer: 'APPROVE', csrf })));
  t.deepEqual(clicks.map((c) => c.status).sort(), [303, 409, 409]);
  for (const id of [first, second, third]) {
    const p = await read(org, id);
    t.is(p.status, 'PENDING_APPROVAL', 'one person did not meet a two-person rule');
    t.deepEqual(p.approval.answers.map((a: any) => a.name), ['Ana Approver']);
  }
  await countersAgree(t, org);
});

test.serial('approvalTtl is a fixed length from the request, in UTC: P1D is 24 hours across a DST change, P1M 30 days', async (t) => {
  for (const [ttl, at, expires] of [
    ['P1D', '2026-03-07T17:00:00.000Z', '2026-03-08T17:00:00.000Z'], // 12:00 EST on Saturday; 13:00 EDT on Sunday
    ['PT24H', '2026-10-31T16:00:00.000Z', '2026-11-01T16:00:00.000Z'], // 12:00 EDT; 11:00 EST
    ['P1M', '2026-01-31T12:00:00.000Z', '2026-03-02T12:00:00.000Z'],
  ]) {
    const org = await quorumOrg((m) => {
      m.organization.timezone = 'America/New_York';
      m.organization.approvalTtl = ttl;
    });
    clock = new Date(at);
    const id = await submit(org, 30000);
    t.is((await read(org, id)).approval.expiresAt, expires, ttl);
  }
});
