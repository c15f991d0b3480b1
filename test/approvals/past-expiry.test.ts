// Between an approval's expiresAt and the expiry job's record of it (docs/reference/decisions.md): a
// person's answer is refused and changes nothing, whichever way and however often it is sent; reads
// show what is recorded (still waiting, no answer yet in decision.outcome); then the expiry records
// EXPIRED once, releasing the hold.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { windowOfPurchase } from '../helpers/windows.ts';
import { expireDueApprovals } from '../../src/approvals/close.ts';

let app: TestApp;
/** The service's clock: the test moves it past expiresAt. No jobs run: the expiry happens when the test says. */
let clock = Date.now();
test.before(async () => {
  app = await startApp({ now: () => new Date(clock) });
});
test.after.always(() => app?.close());

const read = async (org: AppliedOrg, id: string) => (await app.request(`/v1/purchase-requests/${id}`, { key: org.keys['a-key'] })).body.purchase;
const eventTypes = async (id: string) => (await app.store.db.collection('events').find({ 'data.purchaseRequestId': id }).sort({ _id: 1 }).toArray()).map((e: any) => e.type);

test('an answer after expiresAt, before the expiry job ran, is refused and changes nothing; the expiry then ends it', async (t) => {
  const org = await applyManifest(app, shopManifest('past-expiry'));
  const submitted = await app.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(30000) });
  t.is(submitted.body.decision.outcome, 'REQUIRES_APPROVAL');
  const id = submitted.body.purchaseRequest.id;
  const waiting = await read(org, id);
  clock = new Date(waiting.approval.expiresAt).getTime();

  for (const verdict of ['APPROVE', 'REJECT', 'APPROVE']) {
    const res = await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: verdict, person: 'ana' } });
    t.is(res.status, 409, verdict);
    t.is(res.body.error.code, 'approval_not_pending');
  }
  t.deepEqual(await read(org, id), waiting, 'the read-back is as recorded: still waiting, the answer not yet in decision.outcome');
  t.like(waiting, { status: 'PENDING_APPROVAL', approval: { isPending: true, answers: [] }, decision: { outcome: 'REQUIRES_APPROVAL' } });
  t.is((await windowOfPurchase(app.store.db, org.policies.main.id, id))!.heldMinor, 30000, 'the hold stays until the expiry releases it');
  t.deepEqual(await eventTypes(id), ['purchase.approval_required']);

  t.true((await expireDueApprovals(app.deps)) >= 1);
  t.is(await expireDueApprovals(app.deps), 0, 'once');
  t.like(await read(org, id), { status: 'EXPIRED', approval: { state: 'EXPIRED', isPending: false, answers: [] }, decision: { kind: 'APPROVAL_EXPIRED', outcome: 'REJECTED' } });
  t.is((await windowOfPurchase(app.store.db, org.policies.main.id, id))!.heldMinor, 0);
  t.deepEqual(await eventTypes(id), ['purchase.approval_required', 'purchase.approval_expired']);
});
