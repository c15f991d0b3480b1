// The MongoDB wire-protocol listener (src/store/wire/) through the official driver: the store
// conformance suite over src/store/mongo.ts, authentication and the analyst's read-only rights,
// MongoDB's own error codes, multi-message transactions with their lifetime limit, and fault
// injection that makes the driver's withTransaction retry loop run.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { once } from 'node:events';
import { MongoClient, MongoServerError } from 'mongodb';
import { MONGODB_8_WIRE_VERSION, openMongoStore } from '../../src/store/mongo.ts';
import type { Store } from '../../src/store/store.ts';
import { registerStoreConformance } from './conformance.ts';
import { registerCommandConformance } from './command-conformance.ts';
import { startListener, type TestListener } from '../helpers/wire.ts';
import { LANE_TIMEOUT_MS } from '../helpers/store.ts';

const mongosh = fileURLToPath(new URL('../../node_modules/mongosh/bin/mongosh.js', import.meta.url));

let wire: TestListener;
test.before(async () => {
  // MongoDB's default lifetime limit (60 s): the conformance suite's transactions wait for readers on
  // purpose, and on a loaded machine a short limit aborted them. The limit's own test has a listener of its own.
  wire = await startListener();
});
test.after.always(() => wire?.close());

const dbName = () => `w_${randomBytes(5).toString('hex')}`;

async function wireStore(): Promise<Store> {
  const name = dbName();
  const store = await openMongoStore(wire.serviceUrl(name), { dbName: name, timeoutMs: LANE_TIMEOUT_MS });
  const close = store.close.bind(store);
  return Object.assign(store, {
    async close() {
      await store.db.raw.dropDatabase();
      await close();
    },
  });
}

registerStoreConformance(wireStore, { name: 'wire listener' });
registerCommandConformance(wireStore, { name: 'wire listener' });

async function client(t: { teardown(fn: () => unknown): void }, url: string): Promise<MongoClient> {
  const c = await MongoClient.connect(url, { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => c.close());
  return c;
}

async function code(work: Promise<unknown>): Promise<{ code: unknown; codeName: unknown; labels: string[] }> {
  try {
    await work;
  } catch (error) {
    const e = error as MongoServerError;
    return { code: e.code, codeName: e.codeName, labels: e.errorLabels ?? [] };
  }
  throw new Error('expected the command to fail');
}

test('handshake: a one-member replica set that allows transactions, on a wire version the driver accepts', async (t) => {
  const c = await client(t, wire.serviceUrl(dbName()));
  const hello = await c.db('admin').command({ hello: 1 });
  t.is(hello.isWritablePrimary, true);
  t.is(hello.setName, 'spend-control');
  t.deepEqual(hello.hosts, [`127.0.0.1:${wire.listener.port}`]);
  t.is(hello.primary, hello.hosts[0]);
  t.is(hello.logicalSessionTimeoutMinutes, 30);
  t.true(hello.maxWireVersion >= MONGODB_8_WIRE_VERSION, 'what the service asks of a MongoDB (its bulkWrite command)');
  const legacy = await c.db('admin').command({ isMaster: 1 });
  t.is(legacy.ismaster, true);
  t.like(await c.db('admin').command({ buildInfo: 1 }), { version: '8.0.0', versionArray: [8, 0, 0, 0] });
});

test('cursors: a large find comes back through getMore batches; killCursors ends one early', async (t) => {
  const db = (await client(t, wire.serviceUrl(dbName()))).db();
  const c = db.collection<{ _id: number; n: number }>('many');
  await c.insertMany(Array.from({ length: 1000 }, (_, i) => ({ _id: i, n: i % 10 })));
  const all = await c.find({}, { batchSize: 64 }).sort({ _id: -1 }).toArray();
  t.is(all.length, 1000);
  t.is(all[0]._id, 999);
  const cursor = c.find({ n: 3 }, { batchSize: 5 });
  t.truthy(await cursor.next());
  await cursor.close();
  t.is(await c.countDocuments({ n: 3 }), 100);
  t.deepEqual((await c.distinct('n')).sort(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

test('a client bulkWrite inside a transaction whose results fill several batches: getMore on admin joins the transaction, which commits', async (t) => {
  // The results of MongoClient.bulkWrite are a cursor on admin.$cmd.bulkWrite: past its first batch the
  // driver asks for the rest with getMore on admin, in the transaction of the data it wrote elsewhere.
  const name = dbName();
  const c = await client(t, wire.serviceUrl(name));
  await c.db(name).collection('fences').insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: `p${i}`, fence: 0 })) as never[]);
  const session = c.startSession();
  t.teardown(() => session.endSession());
  const result = await session.withTransaction(() =>
    c.bulkWrite<Record<string, { _id: string; fence: number }>>(
      Array.from({ length: 300 }, (_, i) => ({ name: 'updateOne' as const, namespace: `${name}.fences`, filter: { _id: `p${i}` }, update: { $inc: { fence: 1 } } })),
      { session, verboseResults: true },
    ),
  );
  t.is(result.modifiedCount, 300);
  t.is(result.updateResults?.size, 300);
  t.is(await c.db(name).collection('fences').countDocuments({ fence: 1 }), 300);
});

test('findAndModify: remove and replacement forms, listIndexes, listCollections, drop and dropDatabase', async (t) => {
  const name = dbName();
  const c = await client(t, wire.serviceUrl(name));
  const coll = c.db().collection<{ _id: string; v?: number; w?: number }>('fam');
  await coll.insertMany([{ _id: 'a', v: 1 }, { _id: 'b', v: 2 }]);
  t.deepEqual(await coll.findOneAndDelete({ v: { $gt: 0 } }, { sort: { v: -1 } }), { _id: 'b', v: 2 });
  t.deepEqual(await coll.findOneAndReplace({ _id: 'a' }, { w: 9 }, { returnDocument: 'after' }), { _id: 'a', w: 9 });
  t.deepEqual(await coll.findOneAndReplace({ _id: 'z' }, { w: 1 }, { upsert: true, returnDocument: 'after' }), { _id: 'z', w: 1 });
  await coll.createIndex({ w: 1 }, { unique: true, name: 'w_unique' });
  t.deepEqual((await coll.indexes()).map((i) => i.name), ['_id_', 'w_unique']);
  t.is((await code(coll.insertOne({ _id: 'c', w: 9 }))).code, 11000);
  t.deepEqual((await c.db().listCollections().toArray()).map((x) => x.name), ['fam']);
  t.true(await coll.drop());
  t.deepEqual(await c.db().listCollections().toArray(), []);
  await coll.insertOne({ _id: 'again' });
  t.true((await c.db('admin').admin().listDatabases()).databases.some((d) => d.name === name));
  await c.db().dropDatabase();
  t.false((await c.db('admin').admin().listDatabases()).databases.some((d) => d.name === name));
});

test('dropIndexes: by name, key pattern, array of names or \'*\', through mongosh\'s helpers and the driver', async (t) => {
  const name = dbName();
  const url = wire.serviceUrl(name);
  const db = (await client(t, url)).db();
  const c = db.collection<{ _id: number; [field: string]: number }>('ix');
  await c.insertOne({ _id: 1, a: 1, b: 1, c: 1, d: 1 });
  for (const f of ['a', 'b', 'c', 'd']) await c.createIndex({ [f]: 1 });
  const names = async () => (await c.indexes()).map((i) => i.name);

  const script = [
    "const out = { byName: db.ix.dropIndex('a_1'), byKey: db.ix.dropIndex({ b: 1 }) };",
    "try { db.ix.dropIndex('a_1'); } catch (e) { out.missing = { code: e.code, codeName: e.codeName }; }",
    'out.names = db.ix.getIndexes().map((i) => i.name);',
    'print(EJSON.stringify(out));',
  ].join('\n');
  const { stdout } = await promisify(execFile)(process.execPath, [mongosh, url, '--quiet', '--norc', '--eval', script], { env: { ...process.env, MONGOSH_NO_UPDATE_CHECK: '1' }, timeout: 60_000 });
  const out = JSON.parse(stdout.trim().split('\n').at(-1)!);
  t.like(out, { byName: { nIndexesWas: 5, ok: 1 }, byKey: { nIndexesWas: 4, ok: 1 }, missing: { code: 27, codeName: 'IndexNotFound' }, names: ['_id_', 'c_1', 'd_1'] });

  // An array drops all of its names or, when one is missing, none.
  t.is((await code(db.command({ dropIndexes: 'ix', index: ['c_1', 'nope'] }))).code, 27);
  t.deepEqual(await names(), ['_id_', 'c_1', 'd_1']);
  t.is((await code(db.command({ dropIndexes: 'ix', index: { _id: 1 } }))).code, 72);
  t.is((await code(db.command({ dropIndexes: 'absent', index: 'x_1' }))).codeName, 'NamespaceNotFound');
  t.like(await db.command({ dropIndexes: 'ix', index: ['c_1'] }), { nIndexesWas: 3, ok: 1 });
  await c.createIndex({ e: 1 });
  t.like(await db.command({ dropIndexes: 'ix', index: '*' }), { nIndexesWas: 3, ok: 1 });
  t.deepEqual(await names(), ['_id_']);
  t.is((await code((await client(t, wire.analystUrl(name))).db().collection('ix').dropIndex('_id_'))).code, 13, 'the analyst may not');
});

test('authentication: a wrong password is AuthenticationFailed; without credentials every data command is Unauthorized', async (t) => {
  const good = new URL(wire.serviceUrl(dbName()));
  good.password = 'not-the-password';
  const failed = await code(MongoClient.connect(good.toString(), { serverSelectionTimeoutMS: 3000 }));
  t.is(failed.code, 18);
  const anonymous = await client(t, `mongodb://127.0.0.1:${wire.listener.port}/x?directConnection=true`);
  t.is((await anonymous.db('admin').command({ ping: 1 })).ok, 1);
  const refused = await code(anonymous.db('x').collection('c').findOne({}));
  t.is(refused.code, 13);
  t.is(refused.codeName, 'Unauthorized');
  // As mongod 8: its whatsmyuri needs no privilege but does need a user (Command::requiresAuth is left true,
  // "any authenticated user may call"), unlike ping, hello and buildInfo.
  t.is((await code(anonymous.db('admin').command({ whatsmyuri: 1 }))).code, 13);
  t.is((await anonymous.db('admin').command({ buildInfo: 1 })).ok, 1);
  const service = await client(t, wire.serviceUrl(dbName()));
  t.regex((await service.db('admin').command({ whatsmyuri: 1 })).you, /^127\.0\.0\.1:\d+$/);
});

test('the analyst lists, finds, counts, distincts and aggregates a read model, and is refused every write with Unauthorized (13)', async (t) => {
  const name = dbName();
  const service = await client(t, wire.serviceUrl(name));
  await service.db().collection<{ _id: number; amount: number; shop: string }>('analytics_purchases').insertMany([{ _id: 1, amount: 5, shop: 'a' }, { _id: 2, amount: 7, shop: 'b' }]);
  const db = (await client(t, wire.analystUrl(name))).db();
  const sales = db.collection<{ _id: number; amount: number; shop: string }>('analytics_purchases');
  t.deepEqual((await db.listCollections().toArray()).map((c) => c.name), ['analytics_purchases']);
  const status = await db.command({ connectionStatus: 1, showPrivileges: true });
  t.deepEqual(status.authInfo.authenticatedUsers, [{ user: 'analyst', db: 'admin' }]);
  const actions = status.authInfo.authenticatedUserPrivileges.flatMap((p: { actions: string[] }) => p.actions);
  t.true(actions.includes('find'));
  t.false(actions.includes('insert'));
  t.is((await sales.find({ shop: 'a' }).toArray()).length, 1);
  t.is(await sales.countDocuments(), 2);
  t.deepEqual((await sales.distinct('shop')).sort(), ['a', 'b']);
  t.deepEqual(await sales.aggregate([{ $group: { _id: null, total: { $sum: '$amount' } } }]).toArray(), [{ _id: null, total: 12 }]);
  const writes = [
    sales.insertOne({ _id: 3, amount: 1, shop: 'c' }),
    sales.updateOne({ _id: 1 }, { $set: { amount: 0 } }),
    sales.deleteMany({}),
    sales.findOneAndUpdate({ _id: 1 }, { $set: { amount: 0 } }),
    sales.createIndex({ shop: 1 }),
    sales.drop(),
    db.dropDatabase(),
    sales.aggregate([{ $out: 'copy' }]).toArray(),
    sales.aggregate([{ $merge: { into: 'copy' } }]).toArray(),
  ];
  for (const write of writes) t.is((await code(write)).code, 13);
  t.is(await service.db().collection('analytics_purchases').countDocuments({ amount: { $gt: 0 } }), 2, 'nothing was written');
});

test('$out and $merge nested in $facet, $lookup or $unionWith are refused, as MongoDB refuses them, not run on a copy', async (t) => {
  const db = (await client(t, wire.serviceUrl(dbName()))).db();
  const sales = db.collection<{ _id: number }>('sales');
  await sales.insertMany([{ _id: 1 }, { _id: 2 }]);
  const nested = [
    [{ $facet: { copy: [{ $out: 'copy' }] } }],
    [{ $lookup: { from: 'sales', pipeline: [{ $merge: { into: 'copy' } }], as: 'x' } }],
    [{ $unionWith: { coll: 'sales', pipeline: [{ $out: 'copy' }] } }],
  ];
  for (const pipeline of nested) await t.throwsAsync(sales.aggregate(pipeline).toArray(), { instanceOf: MongoServerError }, JSON.stringify(pipeline));
  t.deepEqual((await db.listCollections().toArray()).map((c) => c.name), ['sales']);
});

test('a reply larger than BSON allows is MongoDB\'s BSONObjectTooLarge (10334), not a closed connection', async (t) => {
  const db = (await client(t, wire.serviceUrl(dbName()))).db();
  const c = db.collection<{ _id: number; v: string }>('large');
  await c.insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i, v: `${i}`.padEnd(1024 * 1024, 'x') })));
  t.like(await code(c.distinct('v')), { code: 10334, codeName: 'BSONObjectTooLarge' });
  t.like(await code(c.aggregate([{ $group: { _id: null, all: { $push: '$v' } } }]).toArray()), { code: 10334, codeName: 'BSONObjectTooLarge' });
  t.is((await c.distinct('_id')).length, 20, 'the connection serves on');
});

test('an unknown command is CommandNotFound (59); a malformed message closes only its connection', async (t) => {
  const c = await client(t, wire.serviceUrl(dbName()));
  const unknown = await code(c.db().command({ frobnicate: 1 }));
  t.deepEqual([unknown.code, unknown.codeName], [59, 'CommandNotFound']);
  for (const garbage of [Buffer.from([1, 0, 0, 0, 9, 9, 9, 9]), Buffer.from('GET / HTTP/1.1\r\n\r\n'), Buffer.alloc(64, 0xff)]) {
    const socket = connect(wire.listener.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.on('error', () => {});
    socket.end(garbage);
    await once(socket, 'close');
  }
  // An OP_MSG whose body is not BSON.
  const socket = connect(wire.listener.port, '127.0.0.1');
  await once(socket, 'connect');
  const frame = Buffer.alloc(16 + 4 + 1 + 8);
  frame.writeInt32LE(frame.length, 0);
  frame.writeInt32LE(2013, 12);
  frame.writeInt32LE(8, 21);
  socket.write(frame);
  await once(socket, 'close');
  t.is((await c.db().command({ ping: 1 })).ok, 1, 'the listener still serves');
});

test('property: any bytes in an OP_MSG body get an answer or a closed connection, never a dead listener', async (t) => {
  const c = await client(t, wire.serviceUrl(dbName()));
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), fc.integer({ min: 0, max: 3 }), async (body, flags) => {
      const socket = connect(wire.listener.port, '127.0.0.1');
      socket.on('error', () => {});
      await once(socket, 'connect');
      const frame = Buffer.concat([Buffer.alloc(20), Buffer.from(body)]);
      frame.writeInt32LE(frame.length, 0);
      frame.writeInt32LE(2013, 12);
      frame.writeUInt32LE(flags, 16);
      socket.write(frame);
      // Either a reply comes, or the listener hangs up; a frame it is still waiting for is ours to end.
      const settled = Promise.race([once(socket, 'data'), once(socket, 'close')]);
      socket.end();
      await settled;
      socket.destroy();
    }),
    { numRuns: 60 },
  );
  t.is((await c.db().command({ ping: 1 })).ok, 1);
});

test('a transaction spans messages: invisible until commit, gone on abort', async (t) => {
  const c = await client(t, wire.serviceUrl(dbName()));
  const coll = c.db().collection<{ _id: string }>('tx');
  const session = c.startSession();
  t.teardown(() => session.endSession());
  session.startTransaction();
  await coll.insertOne({ _id: 'one' }, { session });
  t.deepEqual(await coll.findOne({ _id: 'one' }, { session }), { _id: 'one' });
  await session.commitTransaction();
  session.startTransaction();
  await coll.insertOne({ _id: 'two' }, { session });
  await session.abortTransaction();
  t.deepEqual(await coll.find().toArray(), [{ _id: 'one' }]);
});

test('an abandoned transaction is aborted after the lifetime limit and stops holding the store', async (t) => {
  const short = await startListener({ transactionLifetimeMs: 1500 });
  t.teardown(() => short.close());
  const c = await client(t, short.serviceUrl(dbName()));
  const coll = c.db().collection<{ _id: string }>('abandoned');
  const session = c.startSession();
  t.teardown(() => session.endSession().catch(() => {}));
  session.startTransaction();
  await coll.insertOne({ _id: 'never' }, { session });
  // Another writer waits for the store until the listener gives up on the open transaction.
  await coll.insertOne({ _id: 'later' });
  t.deepEqual(await coll.find().toArray(), [{ _id: 'later' }]);
  const late = await code(coll.insertOne({ _id: 'too-late' }, { session }));
  t.is(late.code, 251);
  t.true(late.labels.includes('TransientTransactionError'));
});

test('a transaction whose client has no free connection, every one waiting for the store, is aborted and retried instead of stalling', async (t) => {
  // A lifetime limit far beyond the test's timeout: only the stall breaker can end the wait.
  const slow = await startListener({ transactionLifetimeMs: 10 * 60_000 });
  t.teardown(() => slow.close());
  const c = await client(t, slow.serviceUrl(dbName(), 'maxPoolSize=2'));
  const coll = c.db().collection<{ _id: string }>('pool');
  const session = c.startSession();
  t.teardown(() => session.endSession());
  let attempts = 0;
  let waiters: Array<Promise<unknown>> = [];
  await session.withTransaction(async () => {
    attempts++;
    await coll.insertOne({ _id: `first-${attempts}` }, { session });
    if (attempts === 1) {
      // Both pooled connections now carry writes that wait for this transaction to end.
      waiters = [coll.insertOne({ _id: 'w1' }), coll.insertOne({ _id: 'w2' })];
    }
    await coll.insertOne({ _id: `second-${attempts}` }, { session });
  });
  await Promise.all(waiters);
  t.is(attempts, 2, 'the stalled attempt was aborted and retried');
  t.deepEqual((await coll.find().sort({ _id: 1 }).toArray()).map((d) => d._id), ['first-2', 'second-2', 'w1', 'w2']);
});

test('fault injection: a WriteConflict on a transaction write and an unknown commit result make withTransaction retry; each write lands once', async (t) => {
  // Its own listener: a fail point is one per listener, as in mongod.
  const own = await startListener();
  t.teardown(() => own.close());
  const c = await client(t, own.serviceUrl(dbName(), 'appName=conflicts'));
  const coll = c.db().collection<{ _id: string; n: number }>('retried');
  await coll.insertOne({ _id: 'counter', n: 0 });
  const admin = c.db('admin');
  await admin.command({
    configureFailPoint: 'failCommand',
    mode: { times: 2 },
    data: { failCommands: ['update'], errorCode: 112, errorLabels: ['TransientTransactionError'], appName: 'conflicts' },
  });
  let attempts = 0;
  const session = c.startSession();
  t.teardown(() => session.endSession());
  await session.withTransaction(async () => {
    attempts++;
    await coll.updateOne({ _id: 'counter' }, { $inc: { n: 1 } }, { session });
    await coll.insertOne({ _id: `log-${attempts}`, n: attempts }, { session });
  });
  t.is(attempts, 3, 'two conflicts, then success');
  t.is((await coll.findOne({ _id: 'counter' }))!.n, 1);
  t.is(await coll.countDocuments({ _id: /^log-/ }), 1);

  // The commit happens, but its answer is lost: the driver retries commitTransaction, which succeeds again.
  await admin.command({
    configureFailPoint: 'failCommand',
    mode: { times: 1 },
    data: { failCommands: ['commitTransaction'], writeConcernError: { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } }, appName: 'conflicts' },
  });
  await session.withTransaction(async () => {
    await coll.updateOne({ _id: 'counter' }, { $inc: { n: 1 } }, { session });
  });
  t.is((await coll.findOne({ _id: 'counter' }))!.n, 2);

  // The commit fails before it happens, labelled UnknownTransactionCommitResult: retried, applied once.
  await admin.command({
    configureFailPoint: 'failCommand',
    mode: { times: 1 },
    data: { failCommands: ['commitTransaction'], errorCode: 91, errorLabels: ['UnknownTransactionCommitResult'], appName: 'conflicts' },
  });
  await session.withTransaction(async () => {
    await coll.updateOne({ _id: 'counter' }, { $inc: { n: 1 } }, { session });
  });
  t.is((await coll.findOne({ _id: 'counter' }))!.n, 3);
});

test('a retryable write whose acknowledgement failed is retried by the driver and applied once', async (t) => {
  const own = await startListener();
  t.teardown(() => own.close());
  const c = await client(t, own.serviceUrl(dbName(), 'appName=retries'));
  const coll = c.db().collection<{ _id: string; n: number }>('retryable');
  await coll.insertOne({ _id: 'counter', n: 0 });
  await c.db('admin').command({
    configureFailPoint: 'failCommand',
    mode: { times: 1 },
    data: { failCommands: ['update'], writeConcernError: { code: 91, errmsg: 'shutting down', errorLabels: ['RetryableWriteError'] }, appName: 'retries' },
  });
  await coll.updateOne({ _id: 'counter' }, { $inc: { n: 1 } });
  const { count } = await c.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
  t.is(count, 1, 'the first attempt ran and its answer carried the error');
  t.is((await coll.findOne({ _id: 'counter' }))!.n, 1, 'the retry was answered from the session, not run again');
});

test('configureFailPoint is refused to the analyst and unknown to a listener without test commands', async (t) => {
  const c = await client(t, wire.analystUrl(dbName()));
  t.is((await code(c.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' }))).code, 13);
  const plain = await startListener({ testCommands: false });
  t.teardown(() => plain.close());
  const s = await client(t, plain.serviceUrl(dbName()));
  t.is((await code(s.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' }))).code, 59);
});
