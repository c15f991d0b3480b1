// Replay (docs/integrate/simulations.md#replay): 2,000 purchases recorded under version 1 over several
// simulated days, replayed with a stricter draft, equal purchase by purchase the decisions of a fresh
// service whose active version is that draft, sent the same requests in the same order with the same
// clock; and the replay changed nothing stored.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { allChanges, manifest, request, storeHash, V1_MERCHANTS, V1_RULES, V2_MERCHANTS, V2_RULES } from '../helpers/replay.ts';

const START = Date.parse('2026-03-02T07:00:00.000Z');
const STEP_MS = 3 * 60_000; // 2,000 requests over a little more than four days
const COUNT = 2000;

let clock = START;
let recordedApp: TestApp;
let freshApp: TestApp;
let recordedOrg: AppliedOrg;
let draftId: string;
const recorded: { id: string; outcome: string; reasonCodes: string[] }[] = [];
const fresh: { outcome: string; reasonCodes: string[] }[] = [];

test.before(async () => {
  clock = START - 60_000;
  recordedApp = await startApp({ now: () => new Date(clock) });
  recordedOrg = await applyManifest(recordedApp, manifest('replay-rec', [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]));
  for (let i = 0; i < COUNT; i++) {
    clock = START + i * STEP_MS;
    const { agent, body } = request(i);
    const res = await recordedApp.request('/v1/purchase-requests', { key: recordedOrg.keys[agent], body });
    if (res.status !== 201) throw new Error(`recorded ${i}: ${res.status} ${res.text}`);
    recorded.push({ id: res.body.purchaseRequest.id, outcome: res.body.decision.outcome, reasonCodes: res.body.decision.reasonCodes });
  }
  // Version 2, a draft: a lower threshold, a smaller daily budget, one more blocked merchant.
  clock = START + COUNT * STEP_MS;
  const withDraft = await applyManifest(recordedApp, manifest('replay-rec', [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: false }]));
  draftId = withDraft.policies.office.draftVersionId!;

  clock = START - 60_000;
  freshApp = await startApp({ now: () => new Date(clock) });
  const freshOrg = await applyManifest(freshApp, manifest('replay-fresh', [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: true }]));
  for (let i = 0; i < COUNT; i++) {
    clock = START + i * STEP_MS;
    const { agent, body } = request(i);
    const res = await freshApp.request('/v1/purchase-requests', { key: freshOrg.keys[agent], body });
    if (res.status !== 201) throw new Error(`fresh ${i}: ${res.status} ${res.text}`);
    fresh.push({ outcome: res.body.decision.outcome, reasonCodes: res.body.decision.reasonCodes });
  }
  clock = START + COUNT * STEP_MS + 60_000;
});
test.after.always(async () => {
  await recordedApp?.close();
  await freshApp?.close();
});

const range = { from: new Date(START - 1000).toISOString(), to: new Date(START + COUNT * STEP_MS).toISOString() };
const replay = (body: unknown, query = '') => recordedApp.request(`/v1/simulations/replay${query}`, { key: recordedOrg.keys['org-key'], body });

test.serial('the recorded history has budgets that run out, approvals and blocked merchants', (t) => {
  const codes = new Set(recorded.flatMap((r) => r.reasonCodes));
  for (const code of ['WITHIN_POLICY', 'MERCHANT_BLOCKED', 'APPROVAL_THRESHOLD_EXCEEDED', 'DAILY_LIMIT_EXCEEDED', 'AMOUNT_EXCEEDS_MAX']) t.true(codes.has(code), code);
});

test.serial('a replay of the draft equals a fresh service running it, purchase by purchase, and writes nothing', async (t) => {
  // The org key's first use records its lastUsedAt; after that the clock stands still.
  await recordedApp.request('/v1/policies', { key: recordedOrg.keys['org-key'] });
  const before = await storeHash(recordedApp);
  const first = await replay({ policyVersionId: draftId, ...range }, '?limit=200');
  t.is(first.status, 200, first.text);
  t.like(first.body.simulation, { isSimulation: true, mode: 'REPLAY' });
  t.like(first.body.replay, { id: null, status: 'SUCCEEDED', policyVersionId: draftId, versionNumber: 2, progress: { evaluated: COUNT, total: COUNT } });
  const changes = await allChanges(first, (cursor) => replay({ policyVersionId: draftId, ...range }, `?limit=200&cursor=${cursor}`));
  const byId = new Map(changes.map((c: any) => [c.purchaseRequestId, c]));
  t.is(changes.length, byId.size, 'no change listed twice');
  let mismatches = 0;
  const byTransition: Record<string, number> = {};
  for (let i = 0; i < COUNT; i++) {
    const change: any = byId.get(recorded[i].id);
    const replayed = change ? change.replayed : { outcome: recorded[i].outcome, reasonCodes: recorded[i].reasonCodes };
    if (change) {
      t.deepEqual(change.recorded, { outcome: recorded[i].outcome, reasonCodes: recorded[i].reasonCodes });
      const k = `${recorded[i].outcome}->${replayed.outcome}`;
      byTransition[k] = (byTransition[k] ?? 0) + 1;
    }
    if (replayed.outcome !== fresh[i].outcome || JSON.stringify(replayed.reasonCodes) !== JSON.stringify(fresh[i].reasonCodes)) {
      if (mismatches++ < 5) t.log(`purchase ${i}: replayed ${JSON.stringify(replayed)} fresh ${JSON.stringify(fresh[i])}`);
    }
  }
  t.is(mismatches, 0);
  const summary = first.body.summary;
  t.is(summary.evaluated, COUNT);
  t.is(summary.changed, changes.length);
  t.is(summary.unchanged, COUNT - changes.length);
  t.deepEqual(summary.byTransition, byTransition);
  t.true(summary.changed > 100, `the draft changes many decisions (${summary.changed})`);
  t.true((summary.byReasonCode.DAILY_LIMIT_EXCEEDED ?? 0) > 0 && (summary.byReasonCode.MERCHANT_BLOCKED ?? 0) > 0);
  t.deepEqual(await storeHash(recordedApp), before);
});

test.serial('a replay of the active version over its own period changes nothing', async (t) => {
  const res = await replay({ policyVersionId: recordedOrg.policies.office.activeVersionId, ...range });
  t.is(res.status, 200, res.text);
  t.like(res.body.summary, { evaluated: COUNT, unchanged: COUNT, changed: 0, byTransition: {}, byReasonCode: {} });
  t.deepEqual(res.body.changes, []);
});

test.serial('with an agent, every purchase shares the budget but only the agent\'s are counted', async (t) => {
  const travel = recordedOrg.agents.travel.id;
  const all = await replay({ policyVersionId: draftId, ...range });
  const res = await replay({ policyVersionId: draftId, ...range, agentId: travel }, '?limit=200');
  t.is(res.status, 200);
  t.is(res.body.summary.evaluated, Math.ceil(COUNT / 3));
  t.true(res.body.changes.every((c: any) => c.agentId === travel));
  const changes = await allChanges(res, (cursor) => replay({ policyVersionId: draftId, ...range, agentId: travel }, `?limit=200&cursor=${cursor}`));
  const allTravel = (await allChanges(all, (cursor) => replay({ policyVersionId: draftId, ...range }, `?cursor=${cursor}`))).filter((c: any) => c.agentId === travel);
  t.true(changes.length > 0, 'the draft changes some of the agent\'s decisions');
  t.deepEqual(changes, allTravel);
});

test.serial('bad input is a 400 listing the issues; an unknown or foreign version is 404', async (t) => {
  const tooLong = await replay({ policyVersionId: draftId, from: '2026-01-01T00:00:00Z', to: '2026-04-03T00:00:01Z' });
  t.is(tooLong.status, 400);
  t.is(tooLong.body.error.code, 'invalid_request');
  t.deepEqual(tooLong.body.error.issues.map((i: any) => i.code), ['RANGE_TOO_LONG']);
  const backwards = await replay({ policyVersionId: draftId, from: '2026-03-02T00:00:00Z', to: '2026-03-01T00:00:00Z' });
  t.deepEqual(backwards.body.error.issues.map((i: any) => i.code), ['RANGE_EMPTY']);
  const impossible = await replay({ policyVersionId: draftId, from: '2026-02-30T00:00:00Z', to: '2026-03-01T00:00:00Z' });
  t.is(impossible.status, 400);
  t.deepEqual(impossible.body.error.issues.map((i: any) => `${i.path}:${i.code}`), ['from:INVALID_TIMESTAMP']);
  const shapes = await replay({ policyVersionId: 'nope', from: 'yesterday', extra: 1 });
  t.is(shapes.status, 400);
  t.true(shapes.body.error.issues.length >= 3);
  const cursor = await replay({ policyVersionId: draftId, ...range }, '?cursor=xyz&limit=0');
  t.deepEqual(cursor.body.error.issues.map((i: any) => i.code).sort(), ['INVALID_CURSOR', 'OUT_OF_RANGE']);
  const unknown = await replay({ policyVersionId: '0190c4d0-0000-7000-8000-000000000000', ...range });
  t.is(unknown.status, 404);
  const other = await applyManifest(recordedApp, manifest('replay-other', [{ rules: V1_RULES, merchants: [], activate: true }]));
  const foreign = await recordedApp.request('/v1/simulations/replay', { key: other.keys['org-key'], body: { policyVersionId: draftId, ...range } });
  t.is(foreign.status, 404);
  const agentKey = await recordedApp.request('/v1/simulations/replay', { key: recordedOrg.keys['buyer-key'], body: { policyVersionId: draftId, ...range } });
  t.is(agentKey.status, 403);
  const strangerAgent = await replay({ policyVersionId: draftId, ...range, agentId: other.agents.buyer.id });
  t.is(strangerAgent.status, 404);
  const noJob = await recordedApp.request('/v1/simulations/replay/0190c4d0-0000-7000-8000-000000000000', { key: recordedOrg.keys['org-key'] });
  t.is(noJob.status, 404);
});
