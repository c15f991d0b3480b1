// Analysts' real tools against the wire-protocol listener beside a running service on the
// embedded default: mongosh (the npm package) and pymongo (Debian's python3-pymongo) connect with
// the analyst's URL, run the example aggregations of docs/operate/wire-protocol.md and get what the store itself answers, and
// are refused a write with MongoDB's Unauthorized error.
import test from 'ava';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { EJSON, type Document } from 'bson';
import { DateTime } from 'luxon';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import type { Store } from '../../src/store/store.ts';
import { singleDatabase } from '../../src/store/wire/databases.ts';
import { mongoUrl } from '../../src/store/wire/embedded-listener.ts';
import { WireListener } from '../../src/store/wire/listener.ts';
import { ANALYST_USER, MemoryUsers } from '../../src/store/wire/users.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { periodOf } from '../helpers/windows.ts';

const run = promisify(execFile);
const mongosh = fileURLToPath(new URL('../../node_modules/mongosh/bin/mongosh.js', import.meta.url));
const PYTHON = '/usr/bin/python3';

let store: Store;
let app: TestApp;
let listener: WireListener;
let analystUrl: string;
let organizationId: string;
/** When the purchases were requested: the examples are dated by them, not by the clock (a month's end in Berlin may fall between). */
let requested: { at: Date; month: string; approvedMinor: number }[] = [];

/** The analysts' examples: the js blocks of the "Analysts' read models" section of docs/operate/wire-protocol.md, dated for
 *  the month of the last purchase and the week before the first. */
function readmeExamples(): string[] {
  const readme = readFileSync(new URL('../../docs/operate/wire-protocol.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf("## Analysts' read models"));
  const end = section.indexOf('\n## ', 4);
  const blocks = [...section.slice(0, end).matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1].trim());
  const month = requested.at(-1)!.month;
  const weekBefore = DateTime.fromJSDate(requested[0].at).minus({ days: 7 });
  return blocks.map((b) =>
    b.replace(/'\d{4}-\d{2}'/g, `'${month}'`).replace(/ISODate\('[^']*'\)/g, `ISODate('${weekBefore.toUTC().toISO()}')`),
  );
}

/** What each example asks, as data: the collection and the pipeline, evaluated with stand-ins for the shell's globals. */
function asPipelines(examples: string[]): Array<{ collection: string; pipeline: Document[] }> {
  const db = new Proxy({}, { get: (_, collection) => ({ aggregate: (pipeline: Document[]) => ({ collection: String(collection), pipeline }) }) });
  return examples.map((code) => new Function('db', 'ORG', 'ISODate', `return ${code}`)(db, organizationId, (s: string) => new Date(s)));
}

test.before(async () => {
  store = await openEmbeddedStore();
  app = await startApp({ store });
  const users = new MemoryUsers();
  const password = users.set(ANALYST_USER);
  listener = await WireListener.start({ databases: singleDatabase(store), users, port: 0 });
  analystUrl = mongoUrl(listener.host, listener.port, ANALYST_USER, password, store.db.raw.databaseName);
  const org = await applyManifest(app, acmeManifest('analysts'));
  organizationId = org.organizationId;
  const key = org.keys['buyer-key'];
  for (const [merchant, amountMinor] of [['Paper Co', 3000], ['Paper Co', 4500], ['Paper Co', 60000], ['Shady Goods Ltd', 1000], ['Chairs Inc', 30000]] as const) {
    const res = await app.request('/v1/purchase-requests', { key, body: { merchant, amountMinor, reason: 'office' } });
    if (res.status !== 201) throw new Error(`purchase refused: ${res.text}`);
    const at = (await store.db.collection('purchases').findOne({ _id: res.body.purchaseRequest.id }))!.requestedAt as Date;
    requested.push({ at, month: periodOf('MONTH', at, 'Europe/Berlin'), approvedMinor: res.body.decision.outcome === 'APPROVED' ? amountMinor : 0 });
  }
});
test.after.always(async () => {
  await listener?.close();
  await app?.close();
  await store?.close();
});

async function expected(): Promise<Document[][]> {
  return Promise.all(asPipelines(readmeExamples()).map(({ collection, pipeline }) => store.db.collection(collection).aggregate(pipeline).toArray()));
}

test('the documented examples find the purchases the service decided', async (t) => {
  const [spend, reasons, waiting] = await expected();
  // 3000 + 4500, the approved Paper Co purchases, unless a month's end fell between them.
  const month = requested.at(-1)!.month;
  t.deepEqual(spend.map((s) => s.approvedMinor), [requested.filter((r) => r.month === month).reduce((sum, r) => sum + r.approvedMinor, 0)]);
  t.deepEqual(reasons.map((r) => r._id).sort(), ['AMOUNT_EXCEEDS_MAX', 'MERCHANT_BLOCKED'].sort());
  t.is(waiting.length, 1);
  t.is(waiting[0].heldMinor, 30000);
});

test('mongosh: the analyst runs the documented aggregations as written and is refused a write with Unauthorized', async (t) => {
  const script = [
    `const ORG = ${JSON.stringify(organizationId)};`,
    'const results = [];',
    ...readmeExamples().map((code) => `results.push((${code}).toArray());`),
    'let refused = null;',
    "try { db.analytics_purchases.insertOne({ forged: true }); } catch (e) { refused = { code: e.code, codeName: e.codeName }; }",
    'print(EJSON.stringify({ results, refused, collections: db.getCollectionNames() }));',
  ].join('\n');
  const { stdout } = await run(process.execPath, [mongosh, analystUrl, '--quiet', '--norc', '--eval', script], {
    env: { ...process.env, MONGOSH_NO_UPDATE_CHECK: '1' },
    timeout: 60_000,
  });
  const out = EJSON.parse(stdout.trim().split('\n').at(-1)!) as { results: Document[][]; refused: Document; collections: string[] };
  t.deepEqual(out.results, await expected());
  t.deepEqual(out.refused, { code: 13, codeName: 'Unauthorized' });
  t.true(out.collections.includes('analytics_purchases'));
  t.is(await store.db.collection('analytics_purchases').countDocuments({ forged: true }), 0);
});

test("mongosh, started interactively as the analyst: its startup probes (getLog, getParameter) are refused and it runs a find; the server's state is refused (13)", async (t) => {
  // Not --quiet and not --eval: the shell's own start, which asks getLog for startupWarnings and getParameter for
  // the feature compatibility version, and must carry on when they are refused.
  const script = [
    'const found = db.analytics_purchases.find({}, { amountMinor: 1 }).toArray().length;',
    'const refused = {};',
    "for (const c of [{ serverStatus: 1 }, { getLog: 'global' }, { getCmdLineOpts: 1 }, { getParameter: '*' }]) { try { db.adminCommand(c); } catch (e) { refused[Object.keys(c)[0]] = e.codeName; } }",
    "print('RESULT ' + EJSON.stringify({ found, refused, roles: db.runCommand({ connectionStatus: 1 }).authInfo.authenticatedUserRoles }));",
    'exit',
  ].join('\n');
  const child = execFile(process.execPath, [mongosh, analystUrl, '--norc'], { env: { ...process.env, MONGOSH_NO_UPDATE_CHECK: '1' }, timeout: 60_000 });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdin!.end(script + '\n');
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  t.is(code, 0, stderr);
  const line = stdout.split('\n').find((l) => l.includes('RESULT '));
  t.truthy(line, stdout);
  const out = EJSON.parse(line!.slice(line!.indexOf('RESULT ') + 'RESULT '.length)) as Document;
  t.is(out.found, await store.db.collection('analytics_purchases').countDocuments({}));
  t.true(out.found > 0);
  t.deepEqual(out.refused, { serverStatus: 'Unauthorized', getLog: 'Unauthorized', getCmdLineOpts: 'Unauthorized', getParameter: 'Unauthorized' });
  t.deepEqual(out.roles, [{ role: 'readModels', db: 'admin' }]);
});

const pymongoPresent = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import pymongo']).status === 0;

const PYTHON_SCRIPT = `
import sys, json
import pymongo
from bson import json_util
from pymongo.errors import OperationFailure
client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
db = client.get_default_database()
examples = json_util.loads(sys.stdin.read())
results = [list(db[e['collection']].aggregate(e['pipeline'])) for e in examples]
refused = None
try:
    db.analytics_purchases.insert_one({'forged': True})
except OperationFailure as e:
    refused = {'code': e.code, 'codeName': e.details.get('codeName')}
print(json_util.dumps({'results': results, 'refused': refused, 'collections': db.list_collection_names()}))
`;

if (pymongoPresent) {
  test('pymongo: the analyst runs the same aggregations and is refused a write with Unauthorized', async (t) => {
    const child = execFile(PYTHON, ['-c', PYTHON_SCRIPT, analystUrl], { timeout: 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.stdin!.end(EJSON.stringify(asPipelines(readmeExamples()), { relaxed: false }));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    t.is(code, 0, stderr);
    const out = EJSON.parse(stdout.trim()) as { results: Document[][]; refused: Document; collections: string[] };
    t.deepEqual(out.results, await expected());
    t.deepEqual(out.refused, { code: 13, codeName: 'Unauthorized' });
    t.true(out.collections.includes('analytics_purchases'));
  });
} else {
  test('pymongo: the analyst runs the same aggregations and is refused a write with Unauthorized', (t) => {
    t.fail('not run: Debian python3-pymongo is not installed (apt-get install -y python3-pymongo; .ci/run installs it)');
  });
}
