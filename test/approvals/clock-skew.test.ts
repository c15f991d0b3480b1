// Two instances of the service on one store whose clocks disagree: the purchase is requested on one,
// answered (or cancelled) on the other, whose clock is a minute behind. What the purchase records is
// never before its request (docs/reference/decisions.md), so its events keep their order by
// (purchaseRequestId, createdAt) (docs/reference/contract.md §6.2).
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';

const T = new Date('2026-11-18T10:00:00.000Z').getTime();
let ahead: TestApp;
let behind: TestApp;
test.before(async () => {
  ahead = await startApp({ now: () => new Date(T) });
  behind = await startApp({ store: ahead.store, now: () => new Date(T - 60_000) });
});
test.after.always(async () => {
  await behind?.close();
  await ahead?.close();
});

let orgs = 0;
async function waiting(quorum = 1): Promise<{ org: AppliedOrg; id: string }> {
  const manifest: any = shopManifest(`skew-${++orgs}`);
  manifest.people.push({ handle: 'bo', name: 'Bo Approver', email: `bo@skew-${orgs}.example` });
  if (quorum > 1) manifest.policies[0].rules[1].approvalsRequired = quorum;
  const org = await applyManifest(ahead, manifest);
  const res = await ahead.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(30000) });
  if (res.body.decision?.outcome !== 'REQUIRES_APPROVAL') throw new Error(res.text);
  return { org, id: res.body.purchaseRequest.id };
}

const read = async (org: AppliedOrg, id: string) => (await ahead.request(`/v1/purchase-requests/${id}`, { key: org.keys['a-key'] })).body.purchase;
const events = (id: string) => ahead.store.db.collection('events').find({ 'data.purchaseRequestId': id }).toArray();
const ms = (iso: string) => new Date(iso).getTime();

for (const answer of ['APPROVE', 'REJECT'] as const) {
  test(`an answer (${answer}) on an instance whose clock is behind is not recorded before the request`, async (t) => {
    const { org, id } = await waiting();
    const res = await behind.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer, person: 'ana' } });
    t.is(res.status, 200, res.text);
    const p = await read(org, id);
    t.is(p.requestedAt, new Date(T).toISOString());
    for (const at of [p.resolvedAt, p.decision.evaluatedAt, p.approval.resolvedAt, p.approval.answers[0].answeredAt]) t.true(ms(at) >= ms(p.requestedAt), at);
    const answered = (await events(id)).find((e: any) => e.type === (answer === 'APPROVE' ? 'purchase.approved' : 'purchase.rejected'));
    t.true(answered!.createdAt.getTime() >= T, 'the answer\'s event is not dated before the request\'s');
  });
}

test('under a quorum, each answer is dated no earlier than the one before, and the decision no earlier than both', async (t) => {
  const { org, id } = await waiting(2);
  t.is((await ahead.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } })).status, 200);
  t.is((await behind.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'bo' } })).status, 200);
  const p = await read(org, id);
  t.is(p.status, 'APPROVED');
  const [first, second] = p.approval.answers.map((a: { answeredAt: string }) => ms(a.answeredAt));
  t.true(second >= first);
  t.true(ms(p.decision.evaluatedAt) >= second);
});

test('a cancellation by an archive on an instance whose clock is behind is not recorded before the request', async (t) => {
  const { org, id } = await waiting();
  const res = await behind.admin(`/admin/agents/${org.agents.a.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } });
  t.is(res.status, 200, res.text);
  const p = await read(org, id);
  t.is(p.status, 'CANCELLED');
  for (const at of [p.resolvedAt, p.decision.evaluatedAt, p.approval.resolvedAt]) t.true(ms(at) >= ms(p.requestedAt), at);
});
