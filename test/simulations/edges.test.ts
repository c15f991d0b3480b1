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
