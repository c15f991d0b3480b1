// What the read-only analyst reaches over the wire listener: the read models, and nothing that holds
// credentials, sessions, secrets, sign-in attempts, idempotency records or the outbox. The real app
// writes real data (people with passwords, API keys, a dashboard session, a failed sign-in,
// purchases); the analyst connects with the official driver, scans every collection it can list, and
// is refused every way into the others (find, aggregate, count, distinct, listIndexes, and pipelines
// that $lookup, $graphLookup, $unionWith, $out or $merge into them).
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient, type Db, type Document, type MongoServerError } from 'mongodb';
import { Compile } from 'typebox/compile';
import { AnalyticsDailySpend, AnalyticsPurchase, PolicyView, PurchaseView } from '../../schemas/analytics.ts';
import { openEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { STORE_LAYOUT } from '../../src/compose.ts';
import { ANALYST_COLLECTIONS } from '../../src/store/wire/analyst-access.ts';
import { singleDatabase } from '../../src/store/wire/databases.ts';
import { mongoUrl } from '../../src/store/wire/embedded-listener.ts';
import { WireListener } from '../../src/store/wire/listener.ts';
import { ANALYST_USER, MemoryUsers, SERVICE_USER } from '../../src/store/wire/users.ts';
import type { TestApp } from '../helpers/app.ts';
import { Client, setUpDashboardOrg, startDashboardApp } from '../helpers/dashboard.ts';

let dataDir: string;
let store: EmbeddedStore;
let app: TestApp;
let listener: WireListener;
let analyst: MongoClient;
let service: MongoClient;
let apiKey: string;

test.before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'wire-analyst-'));
  store = await openEmbeddedStore({ dataDir });
  app = await startDashboardApp({ store });
  const users = new MemoryUsers();
  const analystPassword = users.set(ANALYST_USER);
  const servicePassword = users.set(SERVICE_USER);
  listener = await WireListener.start({ databases: singleDatabase(store), users, port: 0 });
  const database = store.db.raw.databaseName;
  analyst = await MongoClient.connect(mongoUrl(listener.host, listener.port, ANALYST_USER, analystPassword, database), { serverSelectionTimeoutMS: 5000 });
  service = await MongoClient.connect(mongoUrl(listener.host, listener.port, SERVICE_USER, servicePassword, database), { serverSelectionTimeoutMS: 5000 });

  const org = await setUpDashboardOrg(app, 'analysts', [{ handle: 'ana', name: 'Ana Admin', email: 'ana@analysts.example', roles: ['admin'] }]);
  apiKey = org.keys['buyer-key'];
  for (const [merchant, amountMinor] of [['Paper Co', 3000], ['Paper Co', 60000], ['Chairs Inc', 30000]] as const) {
    const res = await app.request('/v1/purchase-requests', { key: apiKey, body: { merchant, amountMinor, reason: 'office' } });
    if (res.status !== 201) throw new Error(`purchase refused: ${res.text}`);
  }
  // A live dashboard session (with its CSRF token) and a failed sign-in (an attempt with an email and an address).
  const person = new Client(app.url);
  const signedIn = await person.signIn('ana@analysts.example');
  if (signedIn.status !== 303) throw new Error(`sign-in refused: ${signedIn.status}`);
  await new Client(app.url).signIn('ana@analysts.example', 'not the password');
});
test.after.always(async () => {
  await analyst?.close();
  await service?.close();
  await listener?.close();
  await app?.close();
  await store?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Field names that hold credential material, wherever they are in a document. */
const CREDENTIAL_FIELD = /hash|digest|token|secret|passw|csrf|salt|sealed|cipher|nonce|cookie|private/i;

function credentialFields(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => credentialFields(v, `${path}.${i}`));
  if (!value || typeof value !== 'object' || value instanceof Date) return [];
  return Object.entries(value as Document).flatMap(([k, v]) => [...(CREDENTIAL_FIELD.test(k) ? [`${path}.${k}`] : []), ...credentialFields(v, `${path}.${k}`)]);
}

async function refusal(work: Promise<unknown>): Promise<{ code: unknown; codeName: unknown }> {
  try {
    await work;
  } catch (error) {
    const e = error as MongoServerError;
    return { code: e.code, codeName: e.codeName };
  }
  return { code: 'none', codeName: 'the command succeeded' };
}

const db = (): Db => analyst.db();
const UNAUTHORIZED = { code: 13, codeName: 'Unauthorized' };
const credentialCollections = () => STORE_LAYOUT.collections.filter((name: string) => !ANALYST_COLLECTIONS.has(name));

test('the analyst lists only the read models; every document in them is free of credential fields and values', async (t) => {
  const listed = (await db().listCollections().toArray()).map((c) => c.name).sort();
  t.deepEqual(listed, [...ANALYST_COLLECTIONS].sort());
  t.deepEqual((await db().listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort(), listed);
  t.deepEqual(await db().listCollections({ name: 'people' }).toArray(), [], 'not even by name');

  // What the analyst must not find anywhere: the API key, and each person's password hash and session.
  const secrets: string[] = [apiKey];
  for (const person of await service.db().collection('people').find().toArray()) if (person.passwordHash) secrets.push(person.passwordHash);
  t.true(secrets.length >= 2);
  const sessions = await service.db().collection('dashboard_sessions').find().toArray();
  t.true(sessions.length >= 1, 'a dashboard session exists to be hidden');
  for (const s of sessions) secrets.push(String(s._id), s.csrfToken);
  // And the sign-in attempts, which name a person's email and an address.
  const attempts = await service.db().collection('dashboard_sign_in_throttle').find().toArray();
  t.true(attempts.length >= 1, 'a failed sign-in is recorded');
  for (const a of attempts) secrets.push(String(a._id));

  // Each read model is published with a JSON Schema (schemas/json/) that admits no other field.
  const schemas: Record<string, ReturnType<typeof Compile>> = {
    analytics_purchases: Compile(AnalyticsPurchase),
    analytics_daily_spend: Compile(AnalyticsDailySpend),
    purchase_views: Compile(PurchaseView),
    policy_views: Compile(PolicyView),
  };
  t.deepEqual(Object.keys(schemas).sort(), listed, 'every collection the analyst sees has a schema');
  let scanned = 0;
  for (const name of listed) {
    const docs = await db().collection(name).find().toArray();
    scanned += docs.length;
    for (const d of docs) {
      const json = JSON.parse(JSON.stringify(d));
      t.true(schemas[name].Check(json), `${name}: ${JSON.stringify([...schemas[name].Errors(json)].slice(0, 3))}`);
    }
    t.deepEqual(credentialFields(docs), [], `${name} has no credential fields`);
    const text = JSON.stringify(docs);
    for (const secret of secrets) t.false(text.includes(secret), `${name} holds none of the credentials`);
  }
  t.true(scanned >= 3 * 3, 'the read models hold the purchases and policies');
  t.deepEqual(credentialFields({ a: [{ passwordHash: 'x' }], csrfToken: 1 }), ['.a.0.passwordHash', '.csrfToken'], 'the scan itself finds such fields');
});

test('every other collection is refused to the analyst: find, aggregate, count, distinct, listIndexes (Unauthorized, 13)', async (t) => {
  const others = credentialCollections();
  for (const must of ['people', 'api_keys', 'dashboard_sessions', 'dashboard_sign_in_throttle', 'oauth_access_tokens', 'oauth_refresh_tokens', 'oauth_clients', 'webhook_endpoints', 'idempotency_keys', 'events', 'connections']) {
    t.true(others.includes(must), `${must} is not a read model`);
  }
  for (const name of others) {
    const c = db().collection(name);
    t.like(await refusal(c.find().toArray()), UNAUTHORIZED, `find ${name}`);
    t.like(await refusal(c.findOne({})), UNAUTHORIZED, `findOne ${name}`);
    t.like(await refusal(c.aggregate([]).toArray()), UNAUTHORIZED, `aggregate ${name}`);
    t.like(await refusal(c.countDocuments()), UNAUTHORIZED, `countDocuments ${name}`);
    t.like(await refusal(db().command({ count: name })), UNAUTHORIZED, `count ${name}`);
    t.like(await refusal(c.distinct('_id')), UNAUTHORIZED, `distinct ${name}`);
    t.like(await refusal(c.indexes()), UNAUTHORIZED, `listIndexes ${name}`);
  }
  // A name that is no collection at all is refused the same way: the analyst learns nothing from the answer.
  t.like(await refusal(db().collection('no_such_collection').find().toArray()), UNAUTHORIZED);
  // Its own database's stats count the read models only.
  const stats = await db().command({ dbStats: 1 });
  t.is(stats.collections, ANALYST_COLLECTIONS.size);
});

test('pipelines from a read model cannot reach another collection: $lookup, $graphLookup, $unionWith, $facet, $out, $merge', async (t) => {
  const views = db().collection('analytics_purchases');
  t.true((await views.aggregate([{ $lookup: { from: 'policy_views', localField: 'policyIds', foreignField: '_id', as: 'policies' } }]).toArray()).length > 0, 'between read models it works');
  for (const name of credentialCollections()) {
    const pipelines: Document[][] = [
      [{ $lookup: { from: name, localField: 'organizationId', foreignField: 'organizationId', as: 'x' } }],
      [{ $lookup: { from: name, pipeline: [], as: 'x' } }],
      [{ $lookup: { from: 'policy_views', pipeline: [{ $lookup: { from: name, pipeline: [], as: 'y' } }], as: 'x' } }],
      [{ $lookup: { from: { db: store.db.raw.databaseName, coll: name }, pipeline: [], as: 'x' } }],
      [{ $graphLookup: { from: name, startWith: '$organizationId', connectFromField: '_id', connectToField: 'organizationId', as: 'x' } }],
      [{ $unionWith: name }],
      [{ $unionWith: { coll: name, pipeline: [] } }],
      [{ $unionWith: { coll: 'policy_views', pipeline: [{ $unionWith: name }] } }],
      [{ $facet: { a: [{ $unionWith: name }] } }],
      [{ $unionLookup: { from: name } }],
      [{ $out: name }],
      [{ $merge: { into: name } }],
    ];
    for (const pipeline of pipelines) t.like(await refusal(views.aggregate(pipeline).toArray()), UNAUTHORIZED, `${name}: ${JSON.stringify(pipeline)}`);
  }
});

test('the analyst writes nowhere, not even into a read model through $out or $merge nested in $facet, $lookup or $unionWith', async (t) => {
  const views = db().collection('analytics_purchases');
  const before = await service.db().collection('analytics_purchases').find().toArray();
  const pipelines: Document[][] = [
    [{ $facet: { copy: [{ $out: 'analytics_purchases' }] } }],
    [{ $facet: { copy: [{ $merge: { into: 'policy_views' } }] } }],
    [{ $lookup: { from: 'policy_views', pipeline: [{ $merge: { into: 'analytics_purchases', whenMatched: 'replace' } }], as: 'x' } }],
    [{ $unionWith: { coll: 'policy_views', pipeline: [{ $out: 'analytics_purchases' }] } }],
    [{ $lookup: { from: 'policy_views', pipeline: [{ $facet: { deep: [{ $out: 'purchase_views' }] } }], as: 'x' } }],
  ];
  for (const pipeline of pipelines) t.like(await refusal(views.aggregate(pipeline).toArray()), UNAUTHORIZED, JSON.stringify(pipeline));
  t.deepEqual(await service.db().collection('analytics_purchases').find().toArray(), before);
});

test('no server-side JavaScript: $function, $accumulator and $where are refused before anything is called, for either user', async (t) => {
  const views = db().collection('analytics_purchases');
  // A field path leads to a function (Date.prototype.getTime): the engine must not call it.
  const fn = { $function: { body: '$requestedAt.getTime', args: [], lang: 'js' } };
  const accumulator = { $accumulator: { init: '$requestedAt.getTime', accumulate: '$requestedAt.getTime', accumulateArgs: [], merge: '$requestedAt.getTime', lang: 'js' } };
  const attempts: Array<[string, () => Promise<unknown>]> = [
    ['$function in a pipeline', () => views.aggregate([{ $project: { x: fn } }]).toArray()],
    ['$function in a filter', () => views.find({ $expr: fn }).toArray()],
    ['$function in a projection', () => views.find({}, { projection: { x: fn } }).toArray()],
    ['$function in a count', () => views.countDocuments({ $expr: fn })],
    ['$accumulator', () => views.aggregate([{ $group: { _id: null, x: accumulator } }]).toArray()],
    ['$where', () => views.find({ $where: 'this.amountMinor > 0' }).toArray()],
    // Nor for the service user, whose update pipelines run expressions too.
    ['$function in an update pipeline', () => service.db().collection('analytics_purchases').updateOne({}, [{ $set: { x: fn } }])],
  ];
  for (const [what, attempt] of attempts) {
    const error = await t.throwsAsync(attempt, undefined, what);
    t.regex(String(error?.message), /scriptEnabled/, what);
  }
});

test("the analyst is refused the server's state and configuration (Unauthorized, 13), as mongod's read roles are; the service user is not", async (t) => {
  // What mongod's clusterMonitor grants and read/readAnyDatabase do not: the process, its host, log, parameters and command line.
  const commands: Document[] = [
    { serverStatus: 1 },
    { getLog: 'global' },
    { getLog: 'startupWarnings' },
    { getLog: '*' },
    { getCmdLineOpts: 1 },
    { getParameter: '*' },
    { getParameter: 1, featureCompatibilityVersion: 1 },
    { hostInfo: 1 },
  ];
  for (const command of commands) {
    for (const database of ['admin', store.db.raw.databaseName]) {
      t.like(await refusal(analyst.db(database).command(command)), UNAUTHORIZED, `${JSON.stringify(command)} on ${database}`);
    }
    t.is((await service.db('admin').command(command)).ok, 1, `the service user's ${JSON.stringify(command)}`);
  }
  // What the read roles do grant, or any user has: the handshake, ping, buildInfo, whatsmyuri, connectionStatus, listDatabases.
  for (const command of [{ hello: 1 }, { ping: 1 }, { buildInfo: 1 }, { whatsmyuri: 1 }, { connectionStatus: 1 }, { listDatabases: 1 }]) {
    t.is((await analyst.db('admin').command(command)).ok, 1, JSON.stringify(command));
  }
});

test('connectionStatus tells the truth about the analyst: its role grants the read models, and each privilege it reports works', async (t) => {
  const { authInfo } = await analyst.db('admin').command({ connectionStatus: 1, showPrivileges: true });
  t.deepEqual(authInfo.authenticatedUsers, [{ user: ANALYST_USER, db: 'admin' }]);
  t.deepEqual(authInfo.authenticatedUserRoles, [{ role: 'readModels', db: 'admin' }], 'not readAnyDatabase, which would cover every collection');
  const privileges = authInfo.authenticatedUserPrivileges as Array<{ resource: Document; actions: string[] }>;
  const byCollection = new Map<string, string[]>();
  for (const { resource, actions } of privileges) {
    if (resource.cluster === true) {
      t.deepEqual(actions, ['listDatabases'], 'no cluster action besides listDatabases (no serverStatus, getLog, getCmdLineOpts, hostInfo)');
      continue;
    }
    t.is(resource.db, '', 'the read models in whichever database');
    byCollection.set(resource.collection, actions);
  }
  t.deepEqual(byCollection.get(''), ['dbStats', 'listCollections'], 'no data action on every collection');
  t.deepEqual([...byCollection.keys()].filter((c) => c !== '').sort(), [...ANALYST_COLLECTIONS].sort());
  const writes = /insert|update|remove|create|drop|User|Role|kill(?!Cursors)|Op$/;
  t.deepEqual(privileges.flatMap((p) => p.actions).filter((a) => writes.test(a)), [], 'no write, user, role or operation action');
  // Each reported privilege is one the listener honours, and a collection not reported is refused.
  for (const [collection, actions] of byCollection) {
    if (collection === '') continue;
    t.deepEqual(actions, ['find', 'killCursors', 'listIndexes']);
    await t.notThrowsAsync(db().collection(collection).find().toArray(), `find ${collection}`);
    await t.notThrowsAsync(db().collection(collection).indexes(), `listIndexes ${collection}`);
  }
  t.like(await refusal(db().collection('people').find().toArray()), UNAUTHORIZED);
  t.is((await db().command({ dbStats: 1 })).ok, 1);

  const status = await service.db('admin').command({ connectionStatus: 1 });
  t.deepEqual(status.authInfo.authenticatedUserRoles, [{ role: 'readWriteAnyDatabase', db: 'admin' }]);
});

test('the analyst cannot manage users nor list or kill operations: no such command, for anyone (59)', async (t) => {
  for (const command of [{ createUser: 'mallory', pwd: 'x', roles: ['root'] }, { updateUser: 'analyst', roles: ['root'] }, { grantRolesToUser: 'analyst', roles: ['root'] }, { usersInfo: 1 }, { currentOp: 1 }, { killOp: 1, op: 1 }]) {
    t.like(await refusal(analyst.db('admin').command(command)), { code: 59, codeName: 'CommandNotFound' }, JSON.stringify(command));
  }
});

test('the analyst filters listCollections and listDatabases by name with a string or $in, not a regular expression, which would run on the request thread', async (t) => {
  // ^((.*)*)*x$ backtracks for ever over 'analytics_daily_spend', and nothing could stop it there: any regular expression is refused.
  const BAD_VALUE = { code: 2, codeName: 'BadValue' };
  for (const name of [/^analytics_/, { $regex: '^analytics_' }, { $regex: 'views$', $options: 'i' }]) {
    t.like(await refusal(db().command({ listCollections: 1, filter: { name } })), BAD_VALUE, `listCollections ${String(name)}`);
    t.like(await refusal(analyst.db('admin').command({ listDatabases: 1, filter: { name } })), BAD_VALUE, `listDatabases ${String(name)}`);
  }
  t.deepEqual((await db().listCollections({ name: 'policy_views' }).toArray()).map((c) => c.name), ['policy_views']);
  t.deepEqual((await db().listCollections({ name: { $in: ['policy_views', 'people'] } }).toArray()).map((c) => c.name), ['policy_views']);
  const database = store.db.raw.databaseName;
  t.deepEqual((await analyst.db('admin').command({ listDatabases: 1, filter: { name: database } })).databases.map((d: Document) => d.name), [database]);
  // The service user, whose password no analyst has, keeps them.
  t.deepEqual((await service.db().listCollections({ name: /^policy_vi/ }).toArray()).map((c) => c.name), ['policy_views']);
});
