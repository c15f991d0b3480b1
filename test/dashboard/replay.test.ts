// The dashboard's policy page offers a replay with a table of the changes, and admins put the draft in shadow.
import test from 'ava';
import { applyManifest } from '../helpers/fixtures.ts';
import { Client, setUpDashboardOrg, startDashboardApp } from '../helpers/dashboard.ts';

const NOW = new Date('2026-06-10T10:00:00.000Z');

test('a replay on the policy page lists the changes; an admin starts and stops the shadow', async (t) => {
  const app = await startDashboardApp({ now: () => NOW });
  t.teardown(() => app.close());
  const org = await setUpDashboardOrg(app, 'dash-replay', [
    { handle: 'ana', name: 'Ana Admin', email: 'ana@dash-replay.example', roles: ['admin', 'approver'] },
    { handle: 'vic', name: 'Vic Viewer', email: 'vic@dash-replay.example', roles: ['viewer'] },
  ]);
  for (const amount of [5000, 15000, 30000]) await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: amount, reason: 'stock' } });
  // A draft with a lower approval threshold: the 15000 purchase would go to a person.
  const draftManifest: any = { ...(await import('../helpers/fixtures.ts')).acmeManifest('dash-replay') };
  draftManifest.people = [];
  draftManifest.policies = [{ ...draftManifest.policies[0], activate: false, rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '10000' }] }];
  const draftId = (await applyManifest(app, draftManifest)).policies.office.draftVersionId!;
  const policyId = org.policies.office.id;

  const ana = new Client(app.url);
  await ana.signIn('ana@dash-replay.example');
  const page = await ana.get(`/dashboard/policies?replay=${policyId}&version=${draftId}&from=2026-06-10&to=2026-06-10`);
  t.is(page.status, 200);
  t.regex(page.text, /3 purchases replayed, 1 changed; APPROVED → REQUIRES_APPROVAL: 1\./);
  t.regex(page.text, /<td><a href="\/dashboard\/purchases\/[^"]+">Paper Co<\/a><\/td><td>€150\.00<\/td><td><span class="badge APPROVED">/);
  // Ids in upper-case hex name the same policy and version, as they do in paths and on /v1.
  const upper = await ana.get(`/dashboard/policies?replay=${policyId.toUpperCase()}&version=${draftId.toUpperCase()}&from=2026-06-10&to=2026-06-10`);
  t.regex(upper.text, /3 purchases replayed, 1 changed; APPROVED → REQUIRES_APPROVAL: 1\./);
  const compared = await ana.get(`/dashboard/policies?policy=${policyId.toUpperCase()}&merchant=Paper+Co&amount=150.00&currency=EUR`);
  t.regex(compared.text, /data-simulation="Draft"><h4>Draft<\/h4><p><span class="badge REQUIRES_APPROVAL">/);
  const bad = await ana.get(`/dashboard/policies?replay=${policyId}&version=${draftId}&from=2026-06-10&to=2026-01-01`);
  t.regex(bad.text, /The last day comes before the first/);
  // At most 92 days, counted in the organisation's days: 1 September to 1 December is 92 of them, one an hour longer (DST ends).
  const longest = await ana.get(`/dashboard/policies?replay=${policyId}&version=${draftId}&from=2026-09-01&to=2026-12-01`);
  t.regex(longest.text, /0 purchases replayed, 0 changed/);
  const tooLong = await ana.get(`/dashboard/policies?replay=${policyId}&version=${draftId}&from=2026-09-01&to=2026-12-02`);
  t.regex(tooLong.text, /A replay covers at most 92 days/);

  t.regex(page.text, /Run in shadow/);
  const csrf = (/name="csrf" value="([^"]+)"/.exec(page.text) ?? [])[1];
  const on = await ana.post(`/dashboard/policies/${policyId}/versions/${draftId}/shadow`, { csrf, shadow: 'on' });
  t.is(on.status, 303);
  t.regex((await ana.get('/dashboard/policies')).text, /Stop the shadow/);
  const report = await app.request(`/v1/policies/${policyId}/versions/${draftId}/shadow`, { key: org.keys['admin-key'] });
  t.true(report.body.shadow.shadow);

  const vic = new Client(app.url);
  await vic.signIn('vic@dash-replay.example');
  const viewer = await vic.get('/dashboard/policies');
  t.notRegex(viewer.text, /Stop the shadow/);
  const refused = await vic.post(`/dashboard/policies/${policyId}/versions/${draftId}/shadow`, { csrf: (/name="csrf" value="([^"]+)"/.exec(viewer.text) ?? [])[1], shadow: 'off' });
  t.is(refused.status, 403);

  const off = await ana.post(`/dashboard/policies/${policyId}/versions/${draftId}/shadow`, { csrf, shadow: 'off' });
  t.is(off.status, 303);
  t.false((await app.request(`/v1/policies/${policyId}/versions/${draftId}/shadow`, { key: org.keys['admin-key'] })).body.shadow.shadow);
});
