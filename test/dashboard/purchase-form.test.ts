// The dashboard's purchase form and its one-time token, when the form comes back changed (the
// browser's Back button): another agent is another purchase; other details for the same agent are
// explained, not a JSON error.
import test from 'ava';
import { Client, field, setUpDashboardOrg, startDashboardApp } from '../helpers/dashboard.ts';
import { acmeManifest } from '../helpers/fixtures.ts';

const ANA = { handle: 'ana', name: 'Ana Admin', email: 'ana@acme.example', roles: ['approver', 'admin'] };

test('one form token sent for two agents records a purchase for each; sent again with another amount, a new form', async (t) => {
  const app = await startDashboardApp();
  t.teardown(() => app.close());
  const acme = await setUpDashboardOrg(app, 'acme', [ANA]);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  const form = await client.get('/dashboard/purchases/new');
  const fields = { csrf: field(form.text, 'csrf'), token: field(form.text, 'token'), agent: acme.agents.buyer.id, merchant: 'Paper Co', amount: '12.50', currency: 'EUR', reason: 'Paper' };
  const forBuyer = await client.post('/dashboard/purchases', fields);
  const forTravel = await client.post('/dashboard/purchases', { ...fields, agent: acme.agents.travel.id });
  t.is(forBuyer.status, 303);
  t.is(forTravel.status, 303);
  t.not(forTravel.location, forBuyer.location);
  const agentOf = async (location: string | null | undefined, key: string) =>
    (await app.request(`/v1/purchase-requests/${location!.split('/').pop()}`, { key })).body.purchase?.agent.id;
  t.is(await agentOf(forBuyer.location, acme.keys['buyer-key']), acme.agents.buyer.id);
  t.is(await agentOf(forTravel.location, acme.keys['travel-key']), acme.agents.travel.id);

  const changed = await client.post('/dashboard/purchases', { ...fields, amount: '99.00' });
  t.is(changed.status, 409);
  t.regex(changed.text, /already sent with other details/);
  t.not(field(changed.text, 'token'), fields.token);
  t.is(await app.store.db.collection('purchases').countDocuments({ organizationId: acme.organizationId }), 2);
});

test('an operator setting a new password ends the person\'s dashboard sessions', async (t) => {
  const app = await startDashboardApp();
  t.teardown(() => app.close());
  const acme = await setUpDashboardOrg(app, 'acme', [ANA]);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  t.is((await client.get('/dashboard/purchases')).status, 200);
  const reset = await app.admin(`/admin/people/${acme.people.ana.id}/password`, { method: 'PUT', body: { password: 'a brand new passphrase' } });
  t.is(reset.status, 200);
  const after = await client.get('/dashboard/purchases');
  t.not(after.status, 200);
  t.regex(after.location ?? '', /sign-in/);
});

test('an amount of zero, or beyond what a budget can count, is explained in the currency and not in the API\'s terms', async (t) => {
  const app = await startDashboardApp();
  t.teardown(() => app.close());
  const manifest = acmeManifest('acme');
  const office = manifest.policies[0];
  const draft = { ...office, activate: false, rules: office.rules.map((r) => (r.effect === 'REQUIRE_APPROVAL' ? { ...r, amountMinor: '10000' } : r)) };
  const acme = await setUpDashboardOrg(app, 'acme', [ANA]);
  // A draft of the office policy, so its page offers the draft-versus-active comparison.
  t.is((await app.admin('/admin/manifests', { body: { ...manifest, people: [ANA], policies: [draft, ...manifest.policies.slice(1)] } })).status, 200);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  const form = await client.get('/dashboard/purchases/new');
  const fields = { csrf: field(form.text, 'csrf'), token: field(form.text, 'token'), agent: acme.agents.buyer.id, merchant: 'Paper Co', currency: 'EUR', reason: 'Paper' };
  const cases: Array<[string, RegExp]> = [
    ['0', /role="alert">The amount must be more than zero\./],
    ['0.00', /role="alert">The amount must be more than zero\./],
    ['9999999999999999', /role="alert">The amount can be at most €90,071,992,547,409\.91\./],
  ];
  for (const [amount, explained] of cases) {
    const refused = await client.post('/dashboard/purchases', { ...fields, amount });
    t.is(refused.status, 400, amount);
    t.regex(refused.text, explained, amount);
    t.notRegex(refused.text, /amountMinor/, amount);
    // The draft-versus-active comparison on the policies page reads the same form field.
    const compared = await client.get(`/dashboard/policies?policy=${acme.policies.office.id}&merchant=Paper+Co&amount=${amount}&currency=EUR`);
    t.regex(compared.text, explained, amount);
    t.notRegex(compared.text, /amountMinor/, amount);
  }
  t.is(await app.store.db.collection('purchases').countDocuments({}), 0);
});
