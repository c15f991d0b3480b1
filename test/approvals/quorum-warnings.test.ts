// A rule that asks more approvers than the organisation has can only let its purchases expire: applying
// such a manifest, and validating such a version, says so (a warning: the approvers may come later).
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { quorumManifest } from '../helpers/quorum.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

const WARNING = { code: 'APPROVALS_REQUIRED_ABOVE_APPROVERS', path: 'policies.0.rules.1.approvalsRequired' };

test('a manifest whose three-person rule has two approvers is applied with a warning; the third approver clears it', async (t) => {
  const full = quorumManifest('quorum-warn-1');
  // Cyd left: ana and bob approve; vic only views, and a second handle of bob's email is still bob.
  const short = { ...full, people: [...full.people.filter((p) => p.handle !== 'cyd'), { handle: 'bob2', name: 'Bob again', email: 'bob@quorum-warn-1.example' }] };
  const org = await applyManifest(app, short);
  t.is(org.result.warnings.length, 1);
  t.like(org.result.warnings[0], WARNING);
  t.regex(org.result.warnings[0].message, /asks 3 approvers and the organisation has 2/);

  // The REST validate of the version says the same, at the version's own path.
  const policy = org.policies['two-person'];
  const validate = () => app.request(`/v1/policies/${policy.id}/versions/${policy.activeVersionId}/validate`, { key: org.keys['admin-key'], method: 'POST' });
  const before = await validate();
  t.is(before.status, 200);
  t.true(before.body.valid, 'a warning, not an issue: the version is still acceptable');
  t.deepEqual(before.body.warnings.map((w: { code: string; path: string }) => [w.code, w.path]), [['APPROVALS_REQUIRED_ABOVE_APPROVERS', 'rules.1.approvalsRequired']]);

  const again = await app.admin('/admin/manifests', { body: full });
  t.is(again.status, 200);
  t.deepEqual(again.body.warnings, []);
  t.deepEqual((await validate()).body.warnings, []);
});

test('an organisation with no approver at all is warned about a single-approver rule too', async (t) => {
  const full = quorumManifest('quorum-warn-2');
  const viewersOnly = { ...full, people: full.people.map((p) => ({ ...p, roles: ['viewer'] })) };
  const res = await app.admin('/admin/manifests', { body: viewersOnly });
  t.is(res.status, 200);
  t.deepEqual(
    res.body.warnings.map((w: { path: string }) => w.path),
    ['policies.0.rules.0.approvalsRequired', 'policies.0.rules.1.approvalsRequired', 'policies.1.rules.0.approvalsRequired'],
  );
  t.regex(res.body.warnings[2].message, /asks 1 approver and the organisation has 0/);
});
