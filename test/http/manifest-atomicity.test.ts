// Manifests through POST /admin/manifests (docs/operate/manifests.md): applying the same file again writes
// nothing at all (documents, events, the configuration stamp), a failure half-way writes nothing, and what
// is refused is refused at its path.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { InstrumentedStore } from '../helpers/instrumented-store.ts';
import { testStore } from '../helpers/store.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';

let app: TestApp;
let store: InstrumentedStore;
test.before(async () => {
  store = new InstrumentedStore(await testStore());
  app = await startApp({ store });
});
test.after.always(async () => {
  await app?.close();
  await store?.close();
});

const COLLECTIONS = ['organizations', 'people', 'agents', 'policies', 'policy_versions', 'api_keys', 'policy_views', 'events', 'config_stamps'];
/** Every document of the collections a manifest writes, and the configuration stamp every process reads. */
const snapshot = async () => {
  const out: Record<string, unknown[]> = {};
  for (const name of COLLECTIONS) out[name] = await app.store.db.collection(name).find({}).sort({ _id: 1 }).toArray();
  return out;
};

test.serial('applying the same manifest again writes nothing: no document, no event, no stamp bump, no secret', async (t) => {
  const manifest: any = acmeManifest('again');
  manifest.agents.push({ handle: 'off', name: 'Off', status: 'DISABLED' });
  manifest.policies[1].agents = ['travel', 'off'];
  manifest.policies.push({ ...manifest.policies[0], handle: 'draft', activate: false, status: 'DISABLED' });
  manifest.apiKeys.push({ handle: 'gone', revoked: true }, { handle: 'later', expiresAt: '2030-01-01T00:00:00.000+01:00' });
  manifest.people[0].roles = ['viewer', 'approver'];
  const first = await applyManifest(app, manifest);
  t.true(first.result.changed);
  const before = await snapshot();
  const res = await app.admin('/admin/manifests', { body: manifest });
  t.is(res.status, 200, res.text);
  t.false(res.body.changed, 'reported as unchanged');
  t.deepEqual(await snapshot(), before);
  for (const [handle, key] of Object.entries(res.body.apiKeys as Record<string, object>)) t.false('key' in key, `${handle}: no secret in the second answer`);
});

test.serial('a policy\'s agents or a person\'s roles listed in another order are no change; an agent listed twice is DUPLICATE_ITEMS at its path', async (t) => {
  const manifest: any = acmeManifest('agent-order');
  manifest.policies[1].agents = ['travel', 'buyer'];
  manifest.people[0].roles = ['approver', 'admin'];
  await applyManifest(app, manifest);
  const before = await snapshot();
  manifest.policies[1].agents = ['buyer', 'travel'];
  manifest.people[0].roles = ['admin', 'approver'];
  const reordered = await app.admin('/admin/manifests', { body: manifest });
  t.is(reordered.status, 200);
  t.false(reordered.body.changed);
  t.deepEqual(await snapshot(), before);

  manifest.policies[1].agents = ['buyer', 'travel', 'buyer'];
  const res = await app.admin('/admin/manifests', { body: manifest });
  t.is(res.status, 400, res.text);
  t.deepEqual(res.body.error.issues.map((i: any) => `${i.path}:${i.code}`), ['policies.1.agents:DUPLICATE_ITEMS']);
  t.deepEqual(await snapshot(), before);
});

test.serial('a time zone is stored in its canonical IANA name: another spelling of the same zone is no change; an offset is no zone', async (t) => {
  const manifest: any = acmeManifest('zone-spelling');
  const zone = async () => (await app.store.db.collection('organizations').findOne({ handle: 'zone-spelling' }))!.timezone;
  manifest.organization.timezone = 'america/new_york';
  await applyManifest(app, manifest);
  t.is(await zone(), 'America/New_York');
  const before = await snapshot();
  for (const spelling of ['America/New_York', 'US/Eastern', 'AMERICA/NEW_YORK']) {
    manifest.organization.timezone = spelling;
    const res = await app.admin('/admin/manifests', { body: manifest });
    t.is(res.status, 200, res.text);
    t.false(res.body.changed, spelling);
  }
  t.deepEqual(await snapshot(), before);

  // A zone IANA renamed is stored by its present name, whichever name the runtime's ICU knows it by.
  manifest.organization.timezone = 'Asia/Kolkata';
  t.true((await app.admin('/admin/manifests', { body: manifest })).body.changed);
  t.is(await zone(), 'Asia/Kolkata');
  manifest.organization.timezone = 'Asia/Calcutta';
  t.false((await app.admin('/admin/manifests', { body: manifest })).body.changed);
  t.is(await zone(), 'Asia/Kolkata');

  // One stored as written before this: the next apply writes its canonical name, and records no change of zone.
  await app.store.db.collection('organizations').updateOne({ handle: 'zone-spelling' }, { $set: { timezone: 'asia/calcutta' } });
  const changes = (await app.store.db.collection('organizations').findOne({ handle: 'zone-spelling' }))!.timezoneChanges;
  t.true((await app.admin('/admin/manifests', { body: manifest })).body.changed);
  t.is(await zone(), 'Asia/Kolkata');
  t.deepEqual((await app.store.db.collection('organizations').findOne({ handle: 'zone-spelling' }))!.timezoneChanges, changes);

  manifest.organization.timezone = '+01:00';
  const offset = await app.admin('/admin/manifests', { body: manifest });
  t.is(offset.status, 400, offset.text);
  t.true(JSON.stringify(offset.body).includes('INVALID_TIMEZONE'), offset.text);
});

test.serial('an approval TTL is stored in one spelling: another spelling of the same length is no change and records no TTL change', async (t) => {
  const manifest: any = acmeManifest('ttl-spelling');
  const org = async () => (await app.store.db.collection('organizations').findOne({ handle: 'ttl-spelling' }))!;
  manifest.organization.approvalTtl = 'P1D';
  await applyManifest(app, manifest);
  t.is((await org()).approvalTtl, 'PT24H');
  const before = await snapshot();
  for (const spelling of ['PT24H', 'P1D', 'PT1440M', 'PT86400S', 'P0DT24H0M']) {
    manifest.organization.approvalTtl = spelling;
    const res = await app.admin('/admin/manifests', { body: manifest });
    t.is(res.status, 200, res.text);
    t.false(res.body.changed, spelling);
  }
  t.deepEqual(await snapshot(), before);
  t.is((await org()).approvalTtlChanges, undefined);

  // A different length is a change, recorded once, in the canonical spelling.
  manifest.organization.approvalTtl = 'P1W';
  t.true((await app.admin('/admin/manifests', { body: manifest })).body.changed);
  manifest.organization.approvalTtl = 'PT168H';
  t.false((await app.admin('/admin/manifests', { body: manifest })).body.changed);
  t.like((await org()).approvalTtlChanges, [{ from: 'PT24H', to: 'PT168H' }]);
  t.is((await org()).approvalTtlChanges.length, 1);

  // One stored as written before this: the next apply writes its canonical spelling, and records no change of TTL.
  await app.store.db.collection('organizations').updateOne({ handle: 'ttl-spelling' }, { $set: { approvalTtl: 'P7D' } });
  t.true((await app.admin('/admin/manifests', { body: manifest })).body.changed);
  t.is((await org()).approvalTtl, 'PT168H');
  t.is((await org()).approvalTtlChanges.length, 1);
  // Left out of the manifest, the stored TTL stays, in its canonical spelling.
  delete manifest.organization.approvalTtl;
  t.false((await app.admin('/admin/manifests', { body: manifest })).body.changed);
});

test.serial('a store error half-way through an apply leaves everything as it was', async (t) => {
  const manifest: any = acmeManifest('half-way');
  await applyManifest(app, manifest);
  manifest.organization.name = 'Renamed';
  manifest.agents.push({ handle: 'newbie', name: 'New' });
  manifest.policies[0].rules[0].amountMinor = '60000';
  manifest.apiKeys.push({ handle: 'late' });
  const before = await snapshot();
  // The last write of the apply: the organisation, the agent and the policy version are written by then.
  store.inject = (op) => (op.collection === 'api_keys' && op.method === 'insertOne' ? new Error('the disk is full') : undefined);
  try {
    const res = await app.admin('/admin/manifests', { body: manifest });
    t.is(res.status, 500);
  } finally {
    store.inject = undefined;
  }
  t.deepEqual(await snapshot(), before);
});

test.serial('a name or an email holding a control character or a line break is refused at its path, and nothing is written', async (t) => {
  const cases: Array<[string, (m: any) => void, string]> = [
    ['organization.name', (m) => (m.organization.name = 'Acme\r\nBcc: x@y.example'), 'CONTROL_CHARACTER'],
    ['agents.0.name', (m) => (m.agents[0].name = 'Buyer\u0000'), 'CONTROL_CHARACTER'],
    ['people.0.name', (m) => (m.people[0].name = 'Ana\u001b[31m'), 'CONTROL_CHARACTER'],
    ['policies.0.name', (m) => (m.policies[0].name = 'Office\u2028supplies'), 'CONTROL_CHARACTER'],
    ['people.0.email', (m) => (m.people[0].email = 'ana\u0001@x.example'), 'INVALID_FORMAT'],
  ];
  const before = await snapshot();
  for (const [path, spoil, code] of cases) {
    const manifest: any = acmeManifest('control');
    spoil(manifest);
    const res = await app.admin('/admin/manifests', { body: manifest });
    t.is(res.status, 400, `${path}: ${res.text}`);
    t.deepEqual(res.body.error.issues.map((i: any) => `${i.path}:${i.code}`), [`${path}:${code}`]);
  }
  t.deepEqual(await snapshot(), before);
});

test.serial('a manifest of thousands of agents applies, and applied again writes nothing; past 10000 it is refused whole', async (t) => {
  const manifest: any = acmeManifest('many');
  // 3000, not the 10000 allowed: the driver lane's wire listener makes each of the apply's reads a round trip.
  for (let i = manifest.agents.length; i < 3000; i++) manifest.agents.push({ handle: `agent-${i}`, name: `Agent ${i}` });
  const first = await applyManifest(app, manifest);
  t.is(Object.keys(first.agents).length, 3000);
  const before = await snapshot();
  t.is((await app.admin('/admin/manifests', { body: manifest })).status, 200);
  t.deepEqual(await snapshot(), before);
  for (let i = manifest.agents.length; i <= 10_000; i++) manifest.agents.push({ handle: `agent-${i}`, name: `Agent ${i}` });
  const res = await app.admin('/admin/manifests', { body: manifest });
  t.is(res.status, 400);
  t.deepEqual(res.body.error.issues.map((i: any) => `${i.path}:${i.code}`), ['agents:TOO_MANY_ITEMS']);
  t.deepEqual(await snapshot(), before);
});

test.serial('each kind of change is reported as a change, even one only of a person or a draft', async (t) => {
  const manifest: any = acmeManifest('changed');
  await applyManifest(app, manifest);
  const changes: Array<[string, (m: any) => void]> = [
    ['a person\'s roles', (m) => (m.people[0].roles = ['viewer'])],
    ['an agent\'s description', (m) => (m.agents[1].description = 'Books trains')],
    ['an agent\'s status', (m) => (m.agents[1].status = 'DISABLED')],
    ['a draft', (m) => Object.assign(m.policies[0], { activate: false, rules: [m.policies[0].rules[0]] })],
    ['a key\'s expiry', (m) => (m.apiKeys[2].expiresAt = '2031-01-01T00:00:00.000Z')],
    ['the organisation\'s time zone', (m) => (m.organization.timezone = 'UTC')],
  ];
  for (const [what, change] of changes) {
    change(manifest);
    const res = await app.admin('/admin/manifests', { body: manifest });
    t.true(res.body.changed, what);
    t.false((await app.admin('/admin/manifests', { body: manifest })).body.changed, `${what}, again`);
  }
});
