// Two approvers answering the same purchase at the same moment, from two real service processes on one
// DATA_DIR (issue #32): 100 purchases under a two-person rule, each answered at once by ana through one
// process, bob through the other and ana again through the other. Every purchase ends with exactly one
// decision besides its first, two distinct approvers, and ana counted once; each decision has one
// receipt, and the organisation's chain verifies.
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { startService, tempDataDir, type ServiceProcess } from '../helpers/service-process.ts';
import { quorumManifest } from '../helpers/quorum.ts';
import { windowTotals } from '../helpers/windows.ts';

const run = promisify(execFile);

const TRIALS = 100;

test('100 purchases answered concurrently by two approvers in two processes: one decision each, nobody counted twice', async (t) => {
  const dataDir = tempDataDir(t);
  const one = await startService(t, dataDir);
  const two = await startService(t, dataDir, { RUN_JOBS: '0' });
  const applied = await one.admin('/admin/manifests', quorumManifest('race'));
  t.is(applied.status, 200);
  const key: string = applied.body.apiKeys['buyer-key'].key;
  const organizationId: string = applied.body.organization.id;

  const ids: string[] = [];
  for (let batch = 0; batch < TRIALS / 10; batch++) {
    const created = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? one : two).request('/v1/purchase-requests', { key, body: { merchant: 'Paper Co', amountMinor: '30000', reason: `race ${batch * 10 + i}` } }),
      ),
    );
    for (const r of created) {
      t.is(r.status, 201);
      t.is(r.body.decision.outcome, 'REQUIRES_APPROVAL');
      ids.push(r.body.purchaseRequest.id);
    }
  }

  const answer = (svc: ServiceProcess, id: string, person: string) => svc.admin(`/admin/purchase-requests/${id}/answer`, { answer: 'APPROVE', person });
  const refusals = new Map<string, number>();
  for (let batch = 0; batch < TRIALS / 10; batch++) {
    const trials = await Promise.all(
      ids.slice(batch * 10, batch * 10 + 10).map((id) => Promise.all([answer(one, id, 'ana'), answer(two, id, 'bob'), answer(two, id, 'ana')])),
    );
    for (const [anaOne, bob, anaTwo] of trials) {
      t.is(bob.status, 200, JSON.stringify(bob.body));
      const ana = [anaOne, anaTwo];
      t.is(ana.filter((r) => r.status === 200).length, 1, 'exactly one of ana’s two answers counts');
      const refused = ana.find((r) => r.status !== 200)!;
      t.is(refused.status, 409, JSON.stringify(refused.body));
      refusals.set(refused.body.error.code, (refusals.get(refused.body.error.code) ?? 0) + 1);
    }
  }
  t.deepEqual(
    [...refusals.keys()].filter((code) => code !== 'approval_already_answered_by_person' && code !== 'approval_not_pending'),
    [],
  );

  // What the two processes wrote, read through a connection of our own as a third process would.
  const store = await openEmbeddedStore({ dataDir });
  try {
    const db = store.db;
    const people = await db.collection('people').find({ handle: { $in: ['ana', 'bob'] } }).toArray();
    const expected = people.map((p: any) => p._id).sort();
    for (const id of ids) {
      const purchase: any = await db.collection<{ _id: string }>('purchases').findOne({ _id: id });
      t.is(purchase.status, 'APPROVED');
      const decisions = await db.collection('decisions').find({ purchaseId: id }).toArray();
      t.deepEqual(decisions.map((d: any) => d.kind).sort(), ['APPROVAL_REEVALUATION', 'INITIAL'], `one decision for ${id}`);
      const approval: any = await db.collection('approvals').findOne({ purchaseId: id });
      t.deepEqual(approval.answers.map((a: any) => a.personId).sort(), expected, `two distinct approvers for ${id}`);
      t.is(await db.collection('events').countDocuments({ type: 'purchase.approved', 'data.purchaseRequestId': id }), 1);
    }
    // Every DAY window of the policy, added up: a run across Berlin's midnight spreads the purchases over two days.
    const window = await windowTotals(db, { policyId: applied.body.policies['two-person'].id });
    t.is(window.heldMinor, 0);
    t.is(window.committedMinor, 30000 * TRIALS);
    // Each decision, initial or a person's, has one receipt in the organisation's chain (docs/integrate/receipts.md).
    const receipts = await db.collection('receipts').find({ organizationId }).toArray();
    const decided = await db.collection('decisions').find({ organizationId }).toArray();
    t.is(decided.length, 2 * TRIALS);
    t.deepEqual(receipts.map((r: any) => r.decisionId).sort(), decided.map((d: any) => d._id).sort());
  } finally {
    await store.close();
  }
  await Promise.all([one.stop(), two.stop()]);
  // The chain the answers raced to extend verifies: signatures, seq 1..200 without a gap, every prev.
  const verified = await run(process.execPath, ['scripts/admin.ts', 'verify-log', organizationId], { env: { ...process.env, DATA_DIR: dataDir, MONGODB_URI: '' } });
  t.regex(verified.stdout, new RegExp(`${2 * TRIALS} receipt\\(s\\), seq 1\\.\\.${2 * TRIALS}, signatures, chain and stored decisions agree`));
});
