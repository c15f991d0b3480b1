// The embedded engine remembers the rows it read or wrote while it holds the write lock (an open
// group), so that an update does not read again what a find just read. What it remembers must never
// outlive what SQLite holds: a step or transaction undone, another process's write after the group.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';

interface Counter {
  _id: string;
  n: number;
  tag?: string;
}

test('a transaction undone in a group leaves the next transaction of the group reading what is stored', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Counter>('counters');
  await c.insertMany([{ _id: 'a', n: 1 }, { _id: 'b', n: 1 }]);
  // Started together, both run in one group: the second after the first is undone.
  const undone = store.withTransaction(async (session) => {
    await c.find({ _id: { $in: ['a', 'b'] } }, { session }).toArray();
    await c.updateOne({ _id: 'a', n: 1 }, { $inc: { n: 10 } }, { session });
    throw new Error('changed my mind');
  });
  const seen = store.withTransaction(async (session) => ({
    one: await c.findOne({ _id: 'a' }, { session }),
    many: await c.find({ _id: { $in: ['a', 'b'] } }, { session }).toArray(),
  }));
  await t.throwsAsync(undone, { message: 'changed my mind' });
  const { one, many } = await seen;
  t.deepEqual(one, { _id: 'a', n: 1 });
  t.deepEqual(many, [{ _id: 'a', n: 1 }, { _id: 'b', n: 1 }]);
});

test('a write step undone outside a transaction leaves the group reading what is stored', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Counter>('counters');
  await c.createIndex({ tag: 1 }, { unique: true });
  await c.insertMany([{ _id: 'a', n: 1, tag: 'x' }, { _id: 'b', n: 1, tag: 'y' }]);
  // updateMany changes a, then b collides with a's new tag: the whole step is undone. The reads are
  // a transaction's, so that they wait for the lock and run in the same group after the step (a read
  // outside a transaction while no group is open runs at once).
  const failed = c.updateMany({}, { $set: { tag: 'z' } });
  const seen = store.withTransaction(async (session) => ({
    one: await c.findOne({ _id: 'a' }, { session }),
    many: await c.find({ _id: { $in: ['a', 'b'] } }, { session }).toArray(),
  }));
  await t.throwsAsync(failed, { code: 11000 });
  t.deepEqual(await seen, { one: { _id: 'a', n: 1, tag: 'x' }, many: [{ _id: 'a', n: 1, tag: 'x' }, { _id: 'b', n: 1, tag: 'y' }] });
});

test('a collection dropped and written again in one group is read afresh', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Counter>('counters');
  await c.insertOne({ _id: 'a', n: 1 });
  // Started together, all run in one group: a is remembered, its table dropped and made again.
  const before = c.findOneAndUpdate({ _id: 'a' }, { $set: { tag: 'seen' } }, { returnDocument: 'before' });
  // Not part of the storage contract (no business code drops a collection): the embedded collection's own.
  const dropped = (c as unknown as { drop(): Promise<boolean> }).drop();
  const inserted = c.insertOne({ _id: 'a', n: 2 });
  const after = store.withTransaction(async (session) => ({
    one: await c.findOne({ _id: 'a' }, { session }),
    many: await c.find({ _id: { $in: ['a'] } }, { session }).toArray(),
  }));
  t.deepEqual(await before, { _id: 'a', n: 1 });
  t.true(await dropped);
  await inserted;
  t.deepEqual(await after, { one: { _id: 'a', n: 2 }, many: [{ _id: 'a', n: 2 }] });
});

test('a row another store changed between two groups is read afresh', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'row-cache-'));
  const first = await openEmbeddedStore({ dataDir: join(root, 'data') });
  const second = await openEmbeddedStore({ dataDir: join(root, 'data') });
  t.teardown(async () => {
    await first.close();
    await second.close();
    await rm(root, { recursive: true, force: true });
  });
  const mine = first.db.collection<Counter>('counters');
  const theirs = second.db.collection<Counter>('counters');
  await mine.insertOne({ _id: 'a', n: 1 });
  for (let round = 1; round <= 3; round++) {
    // Read and written by the first store in a group of its own, so remembered there...
    await first.withTransaction(async (session) => {
      const [doc] = await mine.find({ _id: { $in: ['a'] } }, { session }).toArray();
      await mine.updateOne({ _id: 'a', n: doc.n }, { $inc: { n: 1 } }, { session });
    });
    // ...then changed by the second one.
    await theirs.updateOne({ _id: 'a' }, { $inc: { n: 100 } });
    const seen = await first.withTransaction(async (session) => ({
      one: await mine.findOne({ _id: 'a' }, { session }),
      many: await mine.find({ _id: { $in: ['a'] } }, { session }).toArray(),
    }));
    const n = 1 + round * 101;
    t.deepEqual(seen, { one: { _id: 'a', n }, many: [{ _id: 'a', n }] });
  }
});

test('a removed row is not found, in the group that removed it or later', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Counter>('counters');
  await c.insertMany([{ _id: 'a', n: 1 }, { _id: 'b', n: 2 }]);
  const seen = await store.withTransaction(async (session) => {
    await c.find({ _id: { $in: ['a', 'b'] } }, { session }).toArray();
    await c.deleteOne({ _id: 'a' }, { session });
    return { one: await c.findOne({ _id: 'a' }, { session }), many: await c.find({ _id: { $in: ['a', 'b'] } }, { session }).toArray() };
  });
  t.deepEqual(seen, { one: null, many: [{ _id: 'b', n: 2 }] });
});

test('the document an update leaves in the row cache is what the next update of the group reads', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Counter & { x?: unknown; list?: unknown[] }>('counters');
  await c.insertOne({ _id: 'a', n: 1 });
  const result = await store.withTransaction(async (session) => {
    await c.updateOne({ _id: 'a', n: 1 }, { $inc: { n: 1 } }, { session });
    // Kept by the cache, this update's document is the next one's: n is 2 there.
    const second = await c.updateOne({ _id: 'a', n: 2 }, { $inc: { n: 1 }, $set: { list: [1, 'two'] } }, { session });
    // A value the stored form changes (NaN is stored as null): the next update matches what is stored.
    await c.updateOne({ _id: 'a' }, { $set: { x: Number.NaN } }, { session });
    const third = await c.updateOne({ _id: 'a', x: null }, { $set: { tag: 'null' } }, { session });
    // An update whose filter does not match leaves the document for the next one all the same.
    const missed = await c.updateOne({ _id: 'a', n: 1 }, { $set: { tag: 'stale' } }, { session });
    await c.updateOne({ _id: 'a', n: 3 }, { $push: { list: 3 } }, { session });
    return { second: second.modifiedCount, third: third.modifiedCount, missed: missed.matchedCount, doc: await c.findOne({ _id: 'a' }, { session }) };
  });
  t.deepEqual(result, { second: 1, third: 1, missed: 0, doc: { _id: 'a', n: 3, list: [1, 'two', 3], x: null, tag: 'null' } });
});
