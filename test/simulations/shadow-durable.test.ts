// The shadow loses no purchase and counts none twice (docs/operate/shadow.md#durability): purchases
// committed while no drain could run (their process stopped before its drain did) are all evaluated once
// the service starts again, each once, and the report then equals a replay over the shadow's lifetime;
// two processes on one store evaluating one shadow at once count each purchase once.
import test from 'ava';
import { openStore } from '../../src/store/open-store.ts';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import type { Store } from '../../src/store/store.ts';
import { catchUpShadows, drainShadow, shadowLag } from '../../src/simulations/shadow.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { allChanges, manifest, request, V1_MERCHANTS, V1_RULES, V2_MERCHANTS, V2_RULES } from '../helpers/replay.ts';
import { tempDataDir } from '../helpers/service-process.ts';
import { testStore, LANE_TIMEOUT_MS } from '../helpers/store.ts';

/** A process whose drain never runs: as if it were killed right after each commit. */
const noDrain = { nudge() {}, idle: async () => {} };

async function startShadow(app: TestApp, handle: string, v1: { rules: unknown[]; merchants: unknown[] }, v2: { rules: unknown[]; merchants: unknown[] }) {
  const org = await applyManifest(app, manifest(handle, [{ ...v1, activate: true }]));
  const draftId: string = (await applyManifest(app, manifest(handle, [{ ...v2, activate: false }]))).policies.office.draftVersionId!;
  const started = await app.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: true } });
  if (started.status !== 200) throw new Error(started.text);
  return { org, draftId };
}

async function buy(app: TestApp, org: AppliedOrg, i: number): Promise<string> {
  return (await buyAndSee(app, org, i)).id;
}

async function buyAndSee(app: TestApp, org: AppliedOrg, i: number): Promise<{ id: string; outcome: string }> {
  const { agent, body } = request(i);
  const res = await app.request('/v1/purchase-requests', { key: org.keys[agent], body });
  if (res.status !== 201) throw new Error(`${i}: ${res.status} ${res.text}`);
  return { id: res.body.purchaseRequest.id, outcome: res.body.decision.outcome };
}

const report = (app: TestApp, org: AppliedOrg, draftId: string, query = '') =>
  app.request(`/v1/policies/${org.policies.office.id}/versions/${draftId}/shadow${query}`, { key: org.keys['org-key'] });

/** The shadow's report (summary and every change) and a replay of the draft over the shadow's lifetime. */
async function reportAndReplay(app: TestApp, org: AppliedOrg, draftId: string, to: Date) {
  const first = await report(app, org, draftId, '?limit=100');
  const changes = await allChanges(first, (cursor) => report(app, org, draftId, `?limit=100&cursor=${cursor}`));
  const body = { policyVersionId: draftId, from: first.body.shadow.startedAt, to: to.toISOString() };
  const replayed = await app.request('/v1/simulations/replay?limit=200', { key: org.keys['org-key'], body });
  if (replayed.status !== 200) throw new Error(replayed.text);
  const replayChanges = await allChanges(replayed, (cursor) => app.request(`/v1/simulations/replay?limit=200&cursor=${cursor}`, { key: org.keys['org-key'], body }));
  return { summary: first.body.summary, changes, replay: { summary: replayed.body.summary, changes: replayChanges } };
}

/**
 * What the shadow evaluated (its summary), whether the changes it keeps for the report's list are each
 * purchase it counted as changed, once, and how far behind it is.
 */
async function evaluations(store: Store, draftId: string) {
  const chunks = await store.db.collection<{ _id: string; versionId: string; changes: string }>('shadow_decisions').find({ versionId: draftId }).toArray();
  const changed = chunks.flatMap((c) => (JSON.parse(c.changes) as { purchaseRequestId: string }[]).map((x) => x.purchaseRequestId));
  const shadow = await store.db.collection<{ _id: string; organizationId: string; receiptSeq: number; summary: { evaluated: number; changed: number } }>('policy_shadows').findOne({ _id: draftId });
  return {
    evaluated: shadow!.summary.evaluated,
    changedRowsCounted: new Set(changed).size === changed.length && changed.length === shadow!.summary.changed,
    pending: (await shadowLag(store.db, shadow!)).pending,
  };
}

test('purchases committed while no drain runs are all evaluated after a restart, each once, and the report equals a replay over the lifetime', async (t) => {
  const START = Date.parse('2026-06-01T06:00:00.000Z');
  let clock = START - 60_000;
  const now = () => new Date(clock);
  const store = await testStore();
  t.teardown(() => store.close());
  const first = await startApp({ store, now });
  const { org, draftId } = await startShadow(first, 'shadow-restart', { rules: V1_RULES, merchants: V1_MERCHANTS }, { rules: V2_RULES, merchants: V2_MERCHANTS });
  const ids: string[] = [];
  const escalated: string[] = [];
  let answered = 0;
  // Some evaluated as they come; then the drain stops running, and the process goes. Meanwhile people
  // answer some of the earlier approvals: those decisions have receipts too, which the shadow passes over.
  for (let i = 0; i < 150; i++) {
    clock = START + i * 4 * 60_000;
    if (i === 40) {
      await first.deps.shadows!.idle();
      first.deps.shadows = noDrain;
    }
    if (i >= 40 && answered < 4) {
      const res = await first.admin(`/admin/purchase-requests/${escalated[answered]}/answer`, { body: { answer: answered % 2 === 0 ? 'REJECT' : 'APPROVE', person: 'ana' } });
      if (res.status !== 200) throw new Error(res.text);
      answered++;
    }
    const { id, outcome } = await buyAndSee(first, org, i);
    ids.push(id);
    if (outcome === 'REQUIRES_APPROVAL') escalated.push(id);
  }
  t.is(answered, 4);
  // Submissions that read the configuration before the shadow started carry nothing for it on their
  // receipts: the shadow reads those purchases from their records (here, one in three of those pending).
  const carrying = await store.db.collection<{ _id: string; seq: number; shadow?: string }>('receipts').find({ organizationId: org.organizationId, shadow: { $exists: true } }).sort({ seq: 1 }).toArray();
  const bare = carrying.slice(40).filter((_, k) => k % 3 === 0).map((r) => r._id);
  t.true(bare.length > 30);
  await store.db.collection<{ _id: string; shadow?: string }>('receipts').updateMany({ _id: { $in: bare } }, { $unset: { shadow: '' } });
  // 110 purchases and the 4 answers' decisions.
  t.deepEqual(await evaluations(store, draftId), { evaluated: 40, changedRowsCounted: true, pending: 114 });
  // The report says how far behind the shadow is.
  t.like((await report(first, org, draftId)).body, { shadow: { pending: 114, pendingSince: new Date(START + 40 * 4 * 60_000).toISOString() }, summary: { evaluated: 40 } });
  await first.close();

  // Started again, the worker's start-up run evaluates what was left.
  const second = await startApp({ store, now, jobs: {} });
  t.teardown(() => second.close());
  let counted = 0;
  for (let i = 0; i < 400 && counted < ids.length; i++) {
    await new Promise((r) => setTimeout(r, 50));
    counted = (await report(second, org, draftId)).body.summary.evaluated;
  }
  t.is(counted, ids.length);
  t.deepEqual(await evaluations(store, draftId), { evaluated: ids.length, changedRowsCounted: true, pending: 0 });
  t.like((await report(second, org, draftId)).body.shadow, { pending: 0, pendingSince: null });
  // Running it again counts nothing twice.
  t.is(await catchUpShadows(second.deps), 0);
  t.is(await drainShadow(second.deps, draftId), 0);
  const { summary, changes, replay } = await reportAndReplay(second, org, draftId, new Date(clock + 1));
  t.is(summary.evaluated, ids.length);
  t.true(summary.changed > 10, `the draft changes decisions (${summary.changed})`);
  t.deepEqual(summary, replay.summary);
  t.deepEqual(changes, replay.changes);
});

/** Two stores on one database, as two processes open it: the same DATA_DIR, or the same MongoDB database. */
async function twoStores(t: import('ava').ExecutionContext): Promise<[Store, Store]> {
  if (process.env.TEST_MONGODB_URI) {
    const a = await testStore();
    const b = await openStore({ mongodbUri: process.env.TEST_MONGODB_URI, dbName: a.db.raw.databaseName, timeoutMs: LANE_TIMEOUT_MS });
    return [a, b];
  }
  const dataDir = tempDataDir(t);
  const a = await openEmbeddedStore({ dataDir });
  return [a, await openEmbeddedStore({ dataDir })];
}

test('two processes on one store evaluating one shadow at once count each purchase once', async (t) => {
  const [storeA, storeB] = await twoStores(t);
  const a = await startApp({ store: storeA });
  const b = await startApp({ store: storeB });
  t.teardown(async () => {
    await a.close();
    await b.close();
    await storeB.close();
    await storeA.close();
  });
  // No spend limit: each decision is independent of the others, whatever order concurrent commits take.
  const noBudget = V1_RULES.filter((r) => r.ruleType !== 'SPEND_LIMIT');
  const stricter = V2_RULES.filter((r) => r.ruleType !== 'SPEND_LIMIT');
  const { org, draftId } = await startShadow(a, 'shadow-two', { rules: noBudget, merchants: V1_MERCHANTS }, { rules: stricter, merchants: V2_MERCHANTS });
  const COUNT = 160;
  // Half with both drains nudged as purchases commit on either process, concurrently.
  for (let i = 0; i < COUNT / 2; i += 8) await Promise.all(Array.from({ length: 8 }, (_, k) => buy((i + k) % 2 === 0 ? a : b, org, i + k)));
  // Half left pending, then both processes catch up at once, twice each.
  a.deps.shadows = noDrain;
  b.deps.shadows = noDrain;
  for (let i = COUNT / 2; i < COUNT; i += 8) await Promise.all(Array.from({ length: 8 }, (_, k) => buy((i + k) % 2 === 0 ? a : b, org, i + k)));
  await Promise.all([catchUpShadows(a.deps), catchUpShadows(b.deps), drainShadow(a.deps, draftId), drainShadow(b.deps, draftId)]);

  t.deepEqual(await evaluations(storeA, draftId), { evaluated: COUNT, changedRowsCounted: true, pending: 0 });
  const { summary, changes, replay } = await reportAndReplay(b, org, draftId, new Date(Date.now() + 1000));
  t.is(summary.evaluated, COUNT);
  t.true(summary.changed > 10, `the draft changes decisions (${summary.changed})`);
  t.deepEqual(summary, replay.summary);
  const byId = (list: any[]) => [...list].sort((x, y) => (x.purchaseRequestId < y.purchaseRequestId ? -1 : 1));
  t.deepEqual(byId(changes), byId(replay.changes));
});
