// Shadow (docs/integrate/simulations.md#shadow, docs/operate/shadow.md): with a draft in shadow, 500 live purchases
// are decided exactly as without it, and the shadow's report counts exactly the purchases whose decision
// the draft changes (a fresh service running the draft tells which). Also: a large replay as a job.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { allChanges, manifest, storeHash, request, V1_MERCHANTS, V1_RULES, V2_MERCHANTS, V2_RULES } from '../helpers/replay.ts';

const START = Date.parse('2026-05-04T06:00:00.000Z');
const STEP_MS = 5 * 60_000;
const COUNT = 500;
let clock = START;
const now = () => new Date(clock);

type Decision = { id: string; outcome: string; reasonCodes: string[] };

async function run(app: TestApp, org: AppliedOrg, from = 0, to = COUNT): Promise<Decision[]> {
  const out: Decision[] = [];
  for (let i = from; i < to; i++) {
    clock = START + i * STEP_MS;
    const { agent, body } = request(i);
    const res = await app.request('/v1/purchase-requests', { key: org.keys[agent], body });
    if (res.status !== 201) throw new Error(`${i}: ${res.status} ${res.text}`);
    out.push({ id: res.body.purchaseRequest.id, outcome: res.body.decision.outcome, reasonCodes: res.body.decision.reasonCodes });
  }
  return out;
}

/** Version 1 active, then version 2 as its draft (one policy: the second apply writes the draft). */
function draftManifest(handle: string) {
  return [manifest(handle, [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]), manifest(handle, [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: false }])];
}

let shadowed: TestApp;
let plain: TestApp;
let fresh: TestApp;
let org: AppliedOrg;
let draftId: string;
let withShadow: Decision[];
let without: Decision[];
let draftActive: Decision[];

test.before(async () => {
  clock = START - 60_000;
  shadowed = await startApp({ now });
  const [v1, v2] = draftManifest('shadow-on');
  org = await applyManifest(shadowed, v1);
  draftId = (await applyManifest(shadowed, v2)).policies.office.draftVersionId!;
  const started = await shadowed.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: true } });
  if (started.status !== 200) throw new Error(started.text);
  withShadow = await run(shadowed, org);
  await shadowed.deps.shadows!.idle();

  clock = START - 60_000;
  plain = await startApp({ now });
  const [p1, p2] = draftManifest('shadow-off');
  const plainOrg = await applyManifest(plain, p1);
  await applyManifest(plain, p2);
  without = await run(plain, plainOrg);

  clock = START - 60_000;
  fresh = await startApp({ now });
  const freshOrg = await applyManifest(fresh, manifest('shadow-fresh', [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: true }]));
  draftActive = await run(fresh, freshOrg);
  clock = START + COUNT * STEP_MS;
});
test.after.always(async () => {
  await shadowed?.close();
  await plain?.close();
  await fresh?.close();
});

const report = (query = '') => shadowed.request(`/v1/policies/${org.policies.office.id}/versions/${draftId}/shadow${query}`, { key: org.keys['org-key'] });
const same = (a: { outcome: string; reasonCodes: string[] }, b: { outcome: string; reasonCodes: string[] }) => a.outcome === b.outcome && JSON.stringify(a.reasonCodes) === JSON.stringify(b.reasonCodes);

test.serial('a draft in shadow leaves every real decision as it would have been without it', (t) => {
  t.is(withShadow.length, COUNT);
  t.deepEqual(
    withShadow.map(({ outcome, reasonCodes }) => ({ outcome, reasonCodes })),
    without.map(({ outcome, reasonCodes }) => ({ outcome, reasonCodes })),
  );
});

test.serial('the shadow report counts exactly the purchases whose decision the draft changes', async (t) => {
  const first = await report('?limit=100');
  t.is(first.status, 200, first.text);
  t.like(first.body.simulation, { isSimulation: true, mode: 'SHADOW' });
  t.like(first.body.shadow, { policyVersionId: draftId, versionNumber: 2, shadow: true, stoppedAt: null, stopReason: null });
  const changes = await allChanges(first, (cursor) => report(`?limit=100&cursor=${cursor}`));
  const expected = withShadow.flatMap((d, i) => (same(d, draftActive[i]) ? [] : [{ id: d.id, replayed: { outcome: draftActive[i].outcome, reasonCodes: draftActive[i].reasonCodes } }]));
  t.true(expected.length > 20, `the draft changes decisions (${expected.length})`);
  t.like(first.body.summary, { evaluated: COUNT, changed: expected.length, unchanged: COUNT - expected.length });
  t.deepEqual(
    changes.map((c: any) => ({ id: c.purchaseRequestId, replayed: c.replayed })),
    expected,
  );
  // The same summary as a replay over the shadow's lifetime.
  const replay = await shadowed.request('/v1/simulations/replay', {
    key: org.keys['org-key'],
    body: { policyVersionId: draftId, from: first.body.shadow.startedAt, to: new Date(clock + 1).toISOString() },
  });
  t.is(replay.status, 200, replay.text);
  t.deepEqual(replay.body.summary, first.body.summary);
});

test.serial('the shadow holds no budget and records no decision, event or purchase of its own', async (t) => {
  const db = shadowed.store.db;
  const [purchases, decisions, events] = await Promise.all([
    db.collection('purchases').countDocuments({ organizationId: org.organizationId }),
    db.collection('decisions').countDocuments({ organizationId: org.organizationId }),
    db.collection('events').countDocuments({ organizationId: org.organizationId }),
  ]);
  const plainDb = plain.store.db;
  t.is(purchases, COUNT);
  t.is(decisions, COUNT);
  t.true(events >= COUNT);
  t.is(events, await plainDb.collection('events').countDocuments({}));
  const windows = await db.collection('budget_windows').find({}).sort({ periodKey: 1 }).project({ _id: 0, periodKey: 1, committedMinor: 1, heldMinor: 1 }).toArray();
  t.deepEqual(windows, await plainDb.collection('budget_windows').find({}).sort({ periodKey: 1 }).project({ _id: 0, periodKey: 1, committedMinor: 1, heldMinor: 1 }).toArray());
  // Its own holds (of purchases only the draft escalated: 41 hours of purchases, holds of 24) are kept
  // until they expire and no longer: what is left holds only what expires after the newest evaluated.
  const shadow = await db.collection<{ _id: string; cursor: Date }>('policy_shadows').findOne({ _id: draftId });
  const chunks = await db.collection('shadow_holds').find({ shadowId: draftId }).toArray();
  const expiries = chunks.flatMap((c) => (JSON.parse(c.holds) as [string[], [string, string, number, null][]][]).flatMap(([, holds]) => holds.map((h) => h[2])));
  t.true(expiries.length > 0);
  t.true(expiries.every((at) => at > shadow!.cursor.getTime()));
});

test.serial('stopping the shadow ends it; activating the draft ends it too; only drafts run in shadow', async (t) => {
  const stopped = await shadowed.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: false } });
  t.is(stopped.status, 200);
  t.like(stopped.body.shadow, { shadow: false, stopReason: 'STOPPED' });
  await run(shadowed, org, COUNT, COUNT + 10);
  await shadowed.deps.shadows!.idle();
  t.like((await report()).body.summary, { evaluated: COUNT });

  t.like((await shadowed.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: true } })).body.shadow, { shadow: true, stoppedAt: null });
  const [, v2] = draftManifest('shadow-on');
  (v2.policies[0] as { activate: boolean }).activate = true;
  await applyManifest(shadowed, v2);
  const ended = await report();
  t.like(ended.body.shadow, { shadow: false, stopReason: 'ACTIVATED' });
  const active = await shadowed.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: true } });
  t.is(active.status, 409);
  t.is(active.body.error.code, 'version_not_draft');
  t.is((await shadowed.admin('/admin/policy-versions/0190c4d0-0000-7000-8000-000000000000', { method: 'PATCH', body: { shadow: true } })).status, 404);
  t.is((await shadowed.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow: 'yes' } })).status, 400);
});

test.serial('a version never in shadow reports nothing; another organisation\'s is 404; bad paging is 400', async (t) => {
  const other = await applyManifest(shadowed, manifest('shadow-other', [{ rules: V1_RULES, merchants: [], activate: true }]));
  const foreign = await shadowed.request(`/v1/policies/${org.policies.office.id}/versions/${draftId}/shadow`, { key: other.keys['org-key'] });
  t.is(foreign.status, 404);
  const never = await shadowed.request(`/v1/policies/${other.policies.office.id}/versions/${other.policies.office.activeVersionId}/shadow`, { key: other.keys['org-key'] });
  t.is(never.status, 200);
  t.like(never.body, { shadow: { shadow: false, startedAt: null }, summary: { evaluated: 0, changed: 0 }, changes: [], hasMore: false });
  t.is((await report('?limit=abc')).status, 400);
  t.is((await report('?cursor=!!')).status, 400);
  t.is((await report('?cursor=')).body.error?.issues[0].code, 'INVALID_CURSOR'); // as MCP's cursor ""
  // A position after every change lists none; a year past 9999 is no position a change has (compared as text, it
  // sorted before them all and listed every change).
  const at = (time: string) => Buffer.from(JSON.stringify({ v: 1, t: time, id: draftId })).toString('base64url');
  const late = await report(`?cursor=${at('9999-12-31T23:59:59.999Z')}`);
  t.is(late.status, 200);
  t.deepEqual(late.body.changes, []);
  const beyond = await report(`?cursor=${at('+010000-01-01T00:00:00.000Z')}`);
  t.is(beyond.status, 400);
  t.is(beyond.body.error.issues[0].code, 'INVALID_CURSOR');
});

test('a replay above REPLAY_INLINE_LIMIT runs as a job with progress, and reports what the same replay in the request does', async (t) => {
  const app = await startApp({ now: () => new Date(START), env: { REPLAY_INLINE_LIMIT: '10' }, jobs: {} });
  t.teardown(() => app.close());
  const [v1, v2] = draftManifest('replay-job');
  const o = await applyManifest(app, v1);
  const draft = (await applyManifest(app, v2)).policies.office.draftVersionId!;
  for (let i = 0; i < 40; i++) {
    const { agent, body } = request(i);
    t.is((await app.request('/v1/purchase-requests', { key: o.keys[agent], body })).status, 201);
  }
  const body = { policyVersionId: draft, from: new Date(START - 1).toISOString(), to: new Date(START + 1).toISOString() };
  const before = await storeHash(app);
  const queued = await app.request('/v1/simulations/replay', { key: o.keys['org-key'], body });
  t.is(queued.status, 202, queued.text);
  t.like(queued.body.replay, { status: 'QUEUED', progress: { evaluated: 0, total: 40 } });
  t.is(queued.body.summary, null);
  t.is(queued.headers.get('location'), `/v1/simulations/replay/${queued.body.replay.id}`);
  let done = queued;
  for (let i = 0; i < 300 && done.body.replay.status !== 'SUCCEEDED' && done.body.replay.status !== 'FAILED'; i++) {
    await new Promise((r) => setTimeout(r, 50));
    done = await app.request(`/v1/simulations/replay/${queued.body.replay.id}`, { key: o.keys['org-key'] });
  }
  t.like(done.body.replay, { status: 'SUCCEEDED', progress: { evaluated: 40, total: 40 } });
  // A replay writes nothing a decision reads (docs/internals/design.md §9): in a job, only its own
  // documents and the job's.
  const after = await storeHash(app);
  const written = Object.keys({ ...before, ...after }).filter((name) => after[name] !== before[name]);
  t.deepEqual(written.filter((name) => !['agendaJobs', 'simulation_replays', 'simulation_replay_changes'].includes(name)), []);
  const jobChanges = await allChanges(
    await app.request(`/v1/simulations/replay/${queued.body.replay.id}?limit=3`, { key: o.keys['org-key'] }),
    (cursor) => app.request(`/v1/simulations/replay/${queued.body.replay.id}?limit=3&cursor=${cursor}`, { key: o.keys['org-key'] }),
  );
  app.deps.config.replayInlineLimit = 5000;
  const inline = await app.request('/v1/simulations/replay?limit=200', { key: o.keys['org-key'], body });
  t.is(inline.status, 200);
  t.deepEqual(done.body.summary, inline.body.summary);
  t.true(inline.body.summary.changed > 0);
  t.deepEqual(jobChanges, inline.body.changes);
  const other = await applyManifest(app, manifest('replay-job-other', [{ rules: V1_RULES, merchants: [], activate: true }]));
  // Another organisation's replay is not found, word for word as one that never was.
  const foreign = await app.request(`/v1/simulations/replay/${queued.body.replay.id}`, { key: other.keys['org-key'] });
  const unknown = await app.request('/v1/simulations/replay/0190c4d0-0000-7000-8000-000000000000', { key: other.keys['org-key'] });
  t.is(foreign.status, 404);
  t.deepEqual(foreign.body, unknown.body);
  const foreignShadow = await app.request(`/v1/policies/${o.policies.office.id}/versions/${draft}/shadow`, { key: other.keys['org-key'] });
  const unknownShadow = await app.request(`/v1/policies/${o.policies.office.id}/versions/0190c4d0-0000-7000-8000-000000000000/shadow`, { key: other.keys['org-key'] });
  t.is(foreignShadow.status, 404);
  t.deepEqual(foreignShadow.body, unknownShadow.body);
});
