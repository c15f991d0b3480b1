import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { registerStoreConformance } from './conformance.ts';

registerStoreConformance(() => openEmbeddedStore({ ttlSweepIntervalMs: 25 }), { name: 'embedded :memory:' });

/** A store on a database file in a fresh directory, removed again when the store is closed. */
async function fileStore() {
  const dir = mkdtempSync(join(tmpdir(), 'store-conformance-'));
  const store = await openEmbeddedStore({ ttlSweepIntervalMs: 25, dataDir: join(dir, 'data') });
  const close = store.close.bind(store);
  return Object.assign(store, {
    async close() {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  });
}
registerStoreConformance(fileStore, { name: 'embedded file' });

test('embedded: an operation without { session } inside a transaction throws instead of deadlocking', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<{ _id: string }>('x');
  await t.throwsAsync(
    store.withTransaction(async () => {
      await c.insertOne({ _id: 'a' });
    }),
    { message: /without \{ session \}/ }
  );
  await t.throwsAsync(
    store.withTransaction(() => store.withTransaction(async () => 1)),
    { message: /do not nest/ }
  );
  t.is(await c.countDocuments({}), 0);
});

interface Doc {
  _id: string;
  [key: string]: unknown;
}

test('embedded: update values and returned documents are copies', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Doc>('x');
  const payload = { deep: { list: [1] } };
  await c.updateOne({ _id: 'a' }, { $set: { payload } }, { upsert: true });
  payload.deep.list.push(2);
  const after = (await c.findOneAndUpdate({ _id: 'a' }, { $set: { n: 1 } }, { returnDocument: 'after' }))!;
  t.deepEqual(after.payload, { deep: { list: [1] } });
  (after.payload as typeof payload).deep.list.push(3);
  t.deepEqual((await c.findOne({ _id: 'a' }))!.payload, { deep: { list: [1] } });
});

test('embedded: undefined is stored as null, as the driver serialises it', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Doc>('x');
  await c.insertOne({ _id: 'a', gone: undefined, list: [undefined] });
  t.deepEqual(await c.findOne({ _id: 'a' }), { _id: 'a', gone: null, list: [null] });
});

test('embedded: duplicate keys are the driver\'s MongoServerError; sparse and partial unique indexes', async (t) => {
  const { MongoServerError } = await import('mongodb');
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Doc>('x');
  await c.createIndex({ code: 1 }, { unique: true, sparse: true });
  await c.createIndex({ ref: 1 }, { unique: true, partialFilterExpression: { state: 'open' } });
  await c.insertMany([{ _id: 'a' }, { _id: 'b' }], {});
  await c.insertOne({ _id: 'c', code: 'k', ref: 'r', state: 'open' });
  await c.insertOne({ _id: 'd', ref: 'r', state: 'closed' });
  const error = await t.throwsAsync(c.insertOne({ _id: 'e', code: 'k' }));
  t.true(error instanceof MongoServerError);
  t.like(error as object, { code: 11000, keyValue: { code: 'k' } });
  await t.throwsAsync(c.updateOne({ _id: 'd' }, { $set: { state: 'open' } }), { message: /E11000.*ref_1/ });
  t.is(await c.countDocuments({}), 4);
  await t.throwsAsync(c.createIndex({ state: 1 }, { unique: true }), { message: /E11000/ });
});

test('embedded: generated _ids are ObjectIds set on the caller\'s document too', async (t) => {
  const { ObjectId } = await import('mongodb');
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection('x');
  const doc: { n: number; _id?: InstanceType<typeof ObjectId> } = { n: 1 };
  const { insertedId } = await c.insertOne(doc);
  t.true(insertedId instanceof ObjectId);
  t.is(doc._id, insertedId);
  t.is((await c.findOne({ _id: new ObjectId(insertedId.toHexString()) }))!.n, 1);
});

test('embedded: sessions are checked; a closed store refuses work', async (t) => {
  const one = await openEmbeddedStore();
  const two = await openEmbeddedStore();
  t.teardown(() => two.close());
  let kept: unknown;
  await one.withTransaction(async (session) => {
    kept = session;
    await t.throwsAsync(two.db.collection<Doc>('x').insertOne({ _id: 'a' }, { session }), { message: /does not belong/ });
  });
  await t.throwsAsync(one.db.collection<Doc>('x').insertOne({ _id: 'a' }, { session: kept as never }), { message: /already ended/ });
  await one.close();
  await t.throwsAsync(one.db.collection<Doc>('x').findOne({}), { message: /closed/ });
});

test('embedded: sweepExpired removes what TTL indexes expire, by the earliest date of an array', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Doc>('x');
  await c.createIndex({ at: 1 }, { expireAfterSeconds: 3600 });
  const now = Date.now();
  await c.insertMany([
    { _id: 'old', at: new Date(now - 3_700_000) },
    { _id: 'young', at: new Date(now - 1000) },
    { _id: 'mixed', at: [new Date(now), new Date(now - 3_700_000)] },
    { _id: 'not-a-date', at: 'yesterday' },
  ]);
  t.is(await store.sweepExpired(), 2);
  t.deepEqual((await c.find({}).sort({ _id: 1 }).toArray()).map((d) => d._id), ['not-a-date', 'young']);
});

test('embedded: createIndex is idempotent and refuses conflicting definitions, as MongoDB', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Doc>('x');
  t.is(await c.createIndex({ a: 1, b: -1 }), 'a_1_b_-1');
  t.is(await c.createIndex({ a: 1, b: -1 }), 'a_1_b_-1');
  await t.throwsAsync(c.createIndex({ a: 1, b: -1 }, { unique: true }), { message: /same name/ });
  await t.throwsAsync(c.createIndex({ a: 1, b: -1 }, { name: 'other' }), { message: /different name/ });
});

test('embedded: a failed write that created a collection inside a transaction leaves the transaction usable', async (t) => {
  const store = await fileStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Doc>('fresh');
  await store.withTransaction(async (session) => {
    const error = await t.throwsAsync(c.insertMany([{ _id: 'a' }, { _id: 'a' }], { session }));
    t.is((error as { code?: number }).code, 11000);
    await c.insertOne({ _id: 'b' }, { session });
  });
  t.deepEqual(await c.find({}).toArray(), [{ _id: 'b' }]);
  t.deepEqual(await store.db.listCollectionNames(), ['fresh']);
});

test('embedded group commit: what one turn of the event loop writes commits together, and nothing resolves before it is on disk', async (t) => {
  const { DatabaseSync } = await import('node:sqlite');
  const store = await fileStore();
  t.teardown(() => store.close());
  const c = store.db.collection<{ _id: string; n: number }>('group');
  await store.db.createCollection('group');
  // Another connection on the file sees only committed data: each acknowledgement is checked there.
  const other = new DatabaseSync(store.location, { readOnly: true });
  t.teardown(() => other.close());
  const committed = (id: string) => {
    try {
      return other.prepare('SELECT count(*) AS n FROM "group" WHERE id = ?').get(`s${id}`)!.n === 1;
    } catch {
      return false; // not even the table is committed yet
    }
  };
  const seen: boolean[] = [];
  const writes = Array.from({ length: 40 }, (_, i) => {
    const id = `w${i}`;
    const op =
      i % 3 === 0
        ? c.insertOne({ _id: id, n: i })
        : i % 3 === 1
          ? store.withTransaction(async (session) => {
              await c.insertOne({ _id: id, n: i }, { session });
            })
          : // Every fifth of these fails: it leaves nothing, and its neighbours in the group commit.
            store.withTransaction(async (session) => {
              await c.insertOne({ _id: id, n: i }, { session });
              if (i % 5 === 0) throw new Error('refused');
            });
    return op.then(
      () => seen.push(committed(id)),
      (error: Error) => {
        t.is(error.message, 'refused');
        t.false(committed(id));
      },
    );
  });
  // A read started in the same turn resolves only once what it could see is durable.
  const read = c.countDocuments({}).then((n) => ({ n, onDisk: (other.prepare('SELECT count(*) AS n FROM "group"').get()!.n as number) }));
  await Promise.all(writes);
  const failed = Array.from({ length: 40 }, (_, i) => i).filter((i) => i % 3 === 2 && i % 5 === 0).length;
  t.is(seen.length, 40 - failed);
  t.true(seen.every(Boolean), 'every acknowledged write was committed when it was acknowledged');
  const { n, onDisk } = await read;
  t.true(onDisk >= n, 'the read saw nothing that was not yet committed when it resolved');
  t.is(await c.countDocuments({}), 40 - failed);
});

test('embedded: a write waiting for another connection\'s write lock leaves the event loop running, then lands', async (t) => {
  const { dirname } = await import('node:path');
  const first = await fileStore();
  const second = await openEmbeddedStore({ dataDir: dirname(first.location) });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  t.teardown(async () => {
    release();
    await second.close();
    await first.close();
  });
  const a = first.db.collection<{ _id: string }>('lock');
  const b = second.db.collection<{ _id: string }>('lock');
  await first.db.createCollection('lock');
  let inside!: () => void;
  const holding = new Promise<void>((resolve) => (inside = resolve));
  // The first store holds SQLite's write lock (its transaction is open) until released.
  const tx = first.withTransaction(async (session) => {
    await a.insertOne({ _id: 'first' }, { session });
    inside();
    await held;
  });
  await holding;
  const write = b.insertOne({ _id: 'second' });
  let settled = false;
  write.then(
    () => (settled = true),
    () => (settled = true),
  );
  // SQLite's own busy handler would sleep on this thread: the write would have failed (SQLITE_BUSY,
  // after busy_timeout) before this timer could fire.
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.false(settled, 'a timer fired while the write was still waiting for the lock');
  release();
  await tx;
  await write;
  t.deepEqual((await b.find({}).toArray()).map((d) => d._id).sort(), ['first', 'second']);
});

test('embedded: an update moves index keys when it writes a key field, a partial filter field or a $rename target', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<{ _id: number; a?: number; b?: number; flag?: boolean; other?: number }>('touched');
  await c.createIndex({ a: 1 }, { unique: true, partialFilterExpression: { flag: true } });
  await c.createIndex({ b: 1 }, { unique: true, sparse: true });
  await c.insertMany([
    { _id: 1, a: 1, flag: false },
    { _id: 2, a: 1, flag: true },
    { _id: 3, other: 5 },
    { _id: 4, b: 5 },
  ]);
  // An update that writes neither index's fields leaves their keys alone.
  await c.updateOne({ _id: 1 }, { $set: { other: 1 } });
  await t.throwsAsync(c.updateOne({ _id: 1 }, { $set: { flag: true } }), { code: 11000 });
  await t.throwsAsync(c.updateOne({ _id: 3 }, { $rename: { other: 'b' } }), { code: 11000 });
  await t.throwsAsync(c.findOneAndUpdate({ _id: 3 }, { $set: { b: 5 } }), { code: 11000 });
  await c.updateOne({ _id: 4 }, { $unset: { b: '' } });
  await c.updateOne({ _id: 3 }, { $rename: { other: 'b' } });
  t.deepEqual(await c.findOne({ b: 5 }), { _id: 3, b: 5 });
});

test('embedded: dropIndex on one connection deletes the index’s keys; another connection on the file sees it gone; a racing drop is IndexNotFound', async (t) => {
  const { dirname } = await import('node:path');
  const { DatabaseSync } = await import('node:sqlite');
  const first = await fileStore();
  const second = await openEmbeddedStore({ dataDir: dirname(first.location) });
  t.teardown(async () => {
    await second.close();
    await first.close();
  });
  const a = first.db.collection<{ _id: string; email: string; n: number }>('people');
  const b = second.db.collection<{ _id: string; email: string; n: number }>('people');
  await a.createIndex({ email: 1 }, { unique: true });
  await a.createIndex({ n: 1 });
  await a.insertMany([{ _id: 'x', email: 'x@x', n: 1 }, { _id: 'y', email: 'y@x', n: 2 }]);
  t.deepEqual((await b.indexes()).map((i) => i.name), ['_id_', 'email_1', 'n_1']);

  const drops = await Promise.allSettled([a.dropIndex('email_1'), b.dropIndex('email_1')]);
  t.is(drops.filter((d) => d.status === 'fulfilled').length, 1);
  t.like(drops.find((d) => d.status === 'rejected'), { reason: { code: 27, codeName: 'IndexNotFound' } });
  t.deepEqual((await a.indexes()).map((i) => i.name), ['_id_', 'n_1']);
  t.deepEqual((await b.indexes()).map((i) => i.name), ['_id_', 'n_1']);
  await b.insertOne({ _id: 'z', email: 'x@x', n: 3 });

  const file = new DatabaseSync(first.location, { readOnly: true });
  t.teardown(() => file.close());
  t.deepEqual(file.prepare('SELECT name FROM _sc_indexes ORDER BY ix').all().map((r) => r.name), ['n_1']);
  t.is(file.prepare('SELECT count(*) AS n FROM _sc_keys WHERE ix NOT IN (SELECT ix FROM _sc_indexes)').get()!.n, 0, 'no key of the dropped index is left');
  t.is(file.prepare('SELECT count(*) AS n FROM _sc_keys').get()!.n, 3, 'the other index keeps one key per document');
});
