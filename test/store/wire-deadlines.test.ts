// The analyst's reads run on a query thread with a deadline: a regular expression that backtracks
// for ever, or a huge $group, ends with MaxTimeMSExpired (50) while the web process's HTTP keeps
// answering. The store is a DATA_DIR file (a query thread opens its own read-only connection to it;
// a ':memory:' store has nothing another connection could open).
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoClient, type Document, type MongoServerError } from 'mongodb';
import { openEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { singleDatabase } from '../../src/store/wire/databases.ts';
import { mongoUrl } from '../../src/store/wire/embedded-listener.ts';
import { WireListener } from '../../src/store/wire/listener.ts';
import { ANALYST_USER, MemoryUsers } from '../../src/store/wire/users.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';

/** 36 a's and a character that makes ^(a+)+$ try every way of splitting them: 2^36 steps. */
const CATASTROPHIC_REASON = 'a'.repeat(36) + '!';

let dataDir: string;
let store: EmbeddedStore;
let app: TestApp;
let listener: WireListener;
let analyst: MongoClient;

test.before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'wire-deadlines-'));
  store = await openEmbeddedStore({ dataDir });
  app = await startApp({ store });
  const users = new MemoryUsers();
  const password = users.set(ANALYST_USER);
  // A short default, so that the test of a read without maxTimeMS stays short.
  listener = await WireListener.start({ databases: singleDatabase(store), users, port: 0, queryThreads: { maxTimeMs: 3000 } });
  analyst = await MongoClient.connect(mongoUrl(listener.host, listener.port, ANALYST_USER, password, store.db.raw.databaseName), { serverSelectionTimeoutMS: 5000 });
  const org = await applyManifest(app, acmeManifest('deadlines'));
  for (const reason of [CATASTROPHIC_REASON, 'office']) {
    const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: 3000, reason } });
    if (res.status !== 201) throw new Error(`purchase refused: ${res.text}`);
  }
});
test.after.always(async () => {
  await analyst?.close();
  await listener?.close();
  await app?.close();
  await store?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function failure(work: Promise<unknown>): Promise<{ code: unknown; codeName: unknown }> {
  try {
    await work;
  } catch (error) {
    const e = error as MongoServerError;
    return { code: e.code, codeName: e.codeName };
  }
  return { code: 'none', codeName: 'it succeeded' };
}

/** Asks /health/live every 100 ms until work settles; the slowest answer, in ms. */
async function slowestLiveness<T>(work: Promise<T>): Promise<{ result: T; slowestMs: number; probes: number }> {
  let settled = false;
  const result = work.finally(() => (settled = true));
  let slowestMs = 0;
  let probes = 0;
  while (!settled) {
    const started = performance.now();
    const res = await Promise.race([fetch(`${app.url}/health/live`), sleep(5000).then(() => undefined)]);
    slowestMs = Math.max(slowestMs, performance.now() - started);
    if (!res || res.status !== 200) slowestMs = Math.max(slowestMs, 5000);
    await res?.text();
    probes++;
    await sleep(100);
  }
  return { result: await result, slowestMs, probes };
}

const views = () => analyst.db().collection('purchase_views');

test.serial('a catastrophic regular expression ends with MaxTimeMSExpired (50) at its maxTimeMS, and /health/live answers within 1 s meanwhile', async (t) => {
  t.is(await views().countDocuments({ 'readback.reason': CATASTROPHIC_REASON }), 1, 'the reason is there to be matched');
  const query = failure(views().find({ 'readback.reason': { $regex: '^(a+)+$' } }, { maxTimeMS: 1500 }).toArray());
  const { result, slowestMs, probes } = await slowestLiveness(query);
  t.deepEqual(result, { code: 50, codeName: 'MaxTimeMSExpired' });
  t.true(probes >= 3, `only ${probes} probes ran`);
  t.true(slowestMs < 1000, `/health/live took ${Math.round(slowestMs)} ms to answer while the query ran`);
  // The thread that was ended is replaced: the next read answers.
  t.is((await views().find({ 'readback.reason': 'office' }).toArray()).length, 1);
});

test.serial('a read without maxTimeMS has the listener\'s deadline: a huge $group, and aggregate, count and distinct with the regex', async (t) => {
  const huge = [
    { $project: { x: { $range: [0, 5000] } } },
    { $unwind: '$x' },
    { $project: { x: 1, y: { $range: [0, 5000] } } },
    { $unwind: '$y' },
    { $group: { _id: { $mod: [{ $add: ['$x', '$y'] }, 1000] }, n: { $sum: 1 } } },
  ];
  const { result, slowestMs } = await slowestLiveness(failure(views().aggregate(huge).toArray()));
  t.deepEqual(result, { code: 50, codeName: 'MaxTimeMSExpired' });
  t.true(slowestMs < 1000, `/health/live took ${Math.round(slowestMs)} ms to answer while the $group ran`);
  const regex = { 'readback.reason': { $regex: '^(a+)+$' } };
  t.like(await failure(views().aggregate([{ $match: regex }], { maxTimeMS: 500 }).toArray()), { code: 50 });
  t.like(await failure(views().countDocuments(regex, { maxTimeMS: 500 })), { code: 50 });
  t.like(await failure(views().distinct('_id', regex, { maxTimeMS: 500 })), { code: 50 });
  // A maxTimeMS past the listener's limit is cut to it, not honoured.
  const started = Date.now();
  t.like(await failure(views().find(regex, { maxTimeMS: 600_000 }).toArray()), { code: 50 });
  t.true(Date.now() - started < 20_000);
});

test.serial('off the request thread the analyst reads what the store holds, with its BSON types', async (t) => {
  const rows = await analyst.db().collection('analytics_purchases').find({}, { sort: { requestedAt: 1 }, projection: { amountMinor: 1, requestedAt: 1, reasonCodes: 1 } }).toArray();
  t.is(rows.length, 2);
  t.true(rows[0].requestedAt instanceof Date);
  t.is(rows[0].amountMinor, 3000);
  t.is(await analyst.db().collection('analytics_purchases').countDocuments({ amountMinor: 3000 }), 2);
  t.deepEqual(await analyst.db().collection('analytics_purchases').distinct('amountMinor'), [3000]);
  const [total] = await analyst.db().collection('analytics_purchases').aggregate<Document>([{ $group: { _id: null, sum: { $sum: '$amountMinor' } } }]).toArray();
  t.is(total.sum, 6000);
  // A write the service makes is seen by the next read (the thread's snapshot is per read).
  await store.db.collection('analytics_daily_spend').insertOne({ _id: 'fresh', approvedMinor: 1 } as never);
  t.is(await analyst.db().collection('analytics_daily_spend').countDocuments({ _id: 'fresh' } as never), 1);
  // An error in the thread is the command's error, as it would be here.
  t.like(await failure(analyst.db().collection('analytics_purchases').find({ $nonsense: 1 } as never).toArray()), { code: 2 });
});

test('a result far past the user\'s cursor budget is refused on the query thread, before the web process decodes it', async (t) => {
  // One purchase row made into 60 documents that share a 500,000-element array: cheap for the thread to
  // build, some 270 MB of BSON. The web process decodes a thread's result whole, so it must never see it.
  const heapBefore = process.memoryUsage().heapUsed;
  const error = await analyst
    .db()
    .collection('analytics_purchases')
    .aggregate([{ $limit: 1 }, { $project: { a: { $range: [0, 500_000] }, b: { $range: [0, 60] } } }, { $unwind: '$b' }], { maxTimeMS: 30_000 })
    .toArray()
    .then(
      () => null,
      (e: MongoServerError) => e,
    );
  t.truthy(error, 'refused');
  t.is(error!.code, 146);
  t.is(error!.codeName, 'ExceededMemoryLimit');
  t.regex(error!.message, /larger than \d+ bytes, the most the listener holds for one user/, 'refused by the thread, not after decoding by the cursor');
  t.log(`heap before ${Math.round(heapBefore / 1048576)} MB, after ${Math.round(process.memoryUsage().heapUsed / 1048576)} MB`);
  // And the thread is there for the next read.
  t.is(await analyst.db().collection('analytics_purchases').countDocuments({}), 2);
});

test.serial('an analyst who disconnects during a read frees the query thread at once: the next analyst is not kept waiting for its deadline', async (t) => {
  const users = new MemoryUsers();
  const password = users.set(ANALYST_USER);
  // One thread (the default) and a deadline far longer than the test may take.
  const own = await WireListener.start({ databases: singleDatabase(store), users, port: 0, queryThreads: { maxTimeMs: 120_000 } });
  t.teardown(() => own.close());
  const url = mongoUrl(own.host, own.port, ANALYST_USER, password, store.db.raw.databaseName);
  const leaving = await MongoClient.connect(url, { serverSelectionTimeoutMS: 5000 });
  const stuck = failure(leaving.db().collection('purchase_views').find({ 'readback.reason': { $regex: '^(a+)+$' } }).toArray());
  // Queued behind it on the one thread, from the same connection pool: dropped with it.
  const queued = failure(leaving.db().collection('purchase_views').find({ 'readback.reason': { $regex: '^(a+)+$' } }).toArray());
  await sleep(500);
  await leaving.close(true);
  // Both fail on the client as its sockets close; what matters is the thread (below).
  await Promise.all([stuck, queued]);
  const next = await MongoClient.connect(url, { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => next.close());
  const answered = await Promise.race([
    next.db().collection('purchase_views').find({ 'readback.reason': 'office' }).toArray().then((docs) => docs.length),
    sleep(20_000).then(() => 'still waiting after 20 s'),
  ]);
  t.is(answered, 1, 'the next analyst\'s read was answered while the abandoned one would still hold the thread');
});
