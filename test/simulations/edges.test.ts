// Replay and shadow at their edges (docs/integrate/simulations.md, docs/operate/shadow.md): requests at once
// on one shadow, and inputs at the limits the docs state.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { manifest, V1_MERCHANTS, V1_RULES, V2_MERCHANTS, V2_RULES } from '../helpers/replay.ts';

let clock = Date.parse('2026-05-04T06:00:00.000Z');
let app: TestApp;
let org: AppliedOrg;
let draftId: string;
test.before(async () => {
  app = await startApp({ now: () => new Date(clock) });
  org = await applyManifest(app, manifest('edges', [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]));
  draftId = (await applyManifest(app, manifest('edges', [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: false }]))).policies.office.draftVersionId!;
});
test.after.always(() => app?.close());

const patch = (shadow: boolean) => app.admin(`/admin/policy-versions/${draftId}`, { method: 'PATCH', body: { shadow } });
const report = () => app.request(`/v1/policies/${org.policies.office.id}/versions/${draftId}/shadow`, { key: org.keys['org-key'] });

test.serial('starting one shadow several times at once starts it once, and every request says it runs', async (t) => {
  const started = await Promise.all([patch(true), patch(true), patch(true)]);
  t.deepEqual(started.map((r) => r.status), [200, 200, 200], started.map((r) => r.text).join('\n'));
  const shown = (await report()).body.shadow;
  t.like(shown, { shadow: true, stoppedAt: null });
  for (const r of started) t.like(r.body.shadow, { shadow: true, startedAt: shown.startedAt });

  t.is((await patch(false)).status, 200);
  clock += 60_000;
  const again = await Promise.all([patch(true), patch(true), patch(true)]);
  t.deepEqual(again.map((r) => r.status), [200, 200, 200]);
  const restarted = (await report()).body.shadow;
  t.like(restarted, { shadow: true, startedAt: new Date(clock).toISOString() });
  for (const r of again) t.like(r.body.shadow, { shadow: true, startedAt: restarted.startedAt });
});

test.serial('a replay refuses an offset that is no offset (hours past 23, minutes past 59) as it refuses 30 February', async (t) => {
  for (const offset of ['+99:99', '+24:00', '-05:60']) {
    const res = await app.request('/v1/simulations/replay', { key: org.keys['org-key'], body: { policyVersionId: draftId, from: `2026-03-01T00:00${offset}`, to: '2026-03-02T00:00:00Z' } });
    t.is(res.status, 400, `${offset}: ${res.text}`);
    t.deepEqual(res.body.error?.issues?.map((i: { path: string; code: string }) => `${i.path}:${i.code}`), ['from:INVALID_TIMESTAMP'], offset);
  }
  const widest = await app.request('/v1/simulations/replay', { key: org.keys['org-key'], body: { policyVersionId: draftId, from: '2026-03-01T00:00+14:00', to: '2026-03-02T00:00-12:00' } });
  t.is(widest.status, 200, widest.text);
  t.like(widest.body.replay, { from: '2026-02-28T10:00:00.000Z', to: '2026-03-02T12:00:00.000Z' });
});

test.serial('a range bound finer than a millisecond keeps out exactly the purchases before it', async (t) => {
  clock = Date.parse('2026-05-05T10:00:00.000Z');
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason: 'at the bound' } });
  t.is(res.status, 201);
  clock = Date.parse('2026-05-05T11:00:00.000Z');
  const evaluated = async (from: string, to: string) => {
    const r = await app.request('/v1/simulations/replay', { key: org.keys['org-key'], body: { policyVersionId: draftId, from, to } });
    t.is(r.status, 200, r.text);
    return r.body.summary.evaluated;
  };
  // Requested at 10:00:00.000: before a `from` of 10:00:00.0005, and before a `to` of 10:00:00.0005.
  t.is(await evaluated('2026-05-05T10:00:00.0005Z', '2026-05-05T10:30:00Z'), 0);
  t.is(await evaluated('2026-05-05T09:30:00Z', '2026-05-05T10:00:00.0005Z'), 1);
  t.is(await evaluated('2026-05-05T10:00:00.000Z', '2026-05-05T10:00:00.0010Z'), 1);
  t.is(await evaluated('2026-05-05T09:30:00Z', '2026-05-05T10:00:00.000000Z'), 0);
});

test.serial('a range bound an offset carries out of the years 0000-9999 is refused, as the answer could not write it as a Timestamp', async (t) => {
  const replay = (from: string, to: string) => app.request('/v1/simulations/replay', { key: org.keys['org-key'], body: { policyVersionId: draftId, from, to } });
  const late = await replay('9999-12-31T00:00:00Z', '9999-12-31T23:00:00-12:00');
  t.is(late.status, 400, late.text);
  t.deepEqual(late.body.error.issues.map((i: { path: string; code: string }) => `${i.path}:${i.code}`), ['to:INVALID_TIMESTAMP']);
  const early = await replay('0000-01-01T00:00:00+05:00', '0000-01-02T00:00:00Z');
  t.is(early.status, 400, early.text);
  t.deepEqual(early.body.error.issues.map((i: { path: string; code: string }) => `${i.path}:${i.code}`), ['from:INVALID_TIMESTAMP']);
  // The years' own ends are instants like any other.
  const ends = await replay('9999-12-30T00:00:00Z', '9999-12-31T23:59:59.999Z');
  t.is(ends.status, 200, ends.text);
  t.like(ends.body.replay, { from: '9999-12-30T00:00:00.000Z', to: '9999-12-31T23:59:59.999Z' });
  t.is((await replay('0000-01-01T00:00:00Z', '0000-01-02T00:00:00+01:00')).status, 200);
});
