// The embedded engine remembers the rows it read or wrote while it holds the write lock (an open
// group), so that an update does not read again what a find just read. What it remembers must never
// outlive what SQLite holds: a step or transaction undone, another process's write after the group.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
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

// Any value an update may write, those the stored form changes included (NaN, -0, Infinity, bigint,
// undefined, invalid dates, sparse arrays): the row cache may keep a document only when it reads back
// exactly as stored.
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  leaf: fc.oneof(
    // Mostly the values whose stored form differs, so that sequences meet them often.
    { arbitrary: fc.constantFrom(Number.NaN, -0, Number.POSITIVE_INFINITY, 2 ** 53 + 2, null, undefined, new Date(Number.NaN), 1n), weight: 4 },
    { arbitrary: fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 6 }), fc.boolean(), fc.date({ noInvalidDate: false })), weight: 2 },
  ),
  node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf'), tie('list'), tie('doc')),
  list: fc.oneof(fc.array(tie('node'), { maxLength: 3 }), fc.sparseArray(tie('leaf'), { maxLength: 3 })),
  doc: fc.dictionary(fc.constantFrom('p', 'q', 'r'), tie('node'), { maxKeys: 3 }),
})).node;

const FIELDS = ['x', 'y', 'list'] as const;
const update = fc.oneof(
  { arbitrary: fc.record({ $set: fc.dictionary(fc.constantFrom(...FIELDS, 'y.p'), value, { minKeys: 1, maxKeys: 2 }) }), weight: 3 },
  { arbitrary: fc.record({ $inc: fc.record({ n: fc.integer({ min: -3, max: 3 }) }) }), weight: 1 },
  // Type-dependent: on a field that holds no number it fails, so it sees what a value was stored as.
  { arbitrary: fc.record({ $inc: fc.dictionary(fc.constantFrom('x', 'y'), fc.integer({ min: -3, max: 3 }), { minKeys: 1, maxKeys: 1 }) }), weight: 2 },
  { arbitrary: fc.record({ $unset: fc.dictionary(fc.constantFrom(...FIELDS), fc.constant(''), { minKeys: 1, maxKeys: 1 }) }), weight: 1 },
  { arbitrary: fc.record({ $push: fc.record({ list: value }) }), weight: 1 },
);
// Updates of two rows, each filtered by _id and sometimes by a guess at its counter (a version check that
// may miss) or by what a field holds (which a value kept in the wrong form would answer otherwise).
const also = fc.oneof(
  { arbitrary: fc.constant({}), weight: 1 },
  { arbitrary: fc.integer({ min: -2, max: 4 }).map((n) => ({ n })), weight: 1 },
  {
    arbitrary: fc.constantFrom({ x: null }, { y: null }, { 'list.0': null }, { 'y.p': null }, { x: { $exists: true } }, { x: { $type: 'double' } }, { x: { $type: 'date' } }, { 'y.p': { $gt: 0 } }),
    weight: 3,
  },
);
// Mostly one row, so that its updates follow each other through the cache.
const step = fc.record({ id: fc.constantFrom('a', 'a', 'a', 'b'), also, update });

test('updates through the row cache in one group leave what the same updates leave one group each (fast-check)', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
      const grouped = await openEmbeddedStore();
      const apart = await openEmbeddedStore();
      try {
        const seed = [{ _id: 'a', n: 0 }, { _id: 'b', n: 0, y: { p: 1 } }];
        for (const store of [grouped, apart]) await store.db.collection<Counter>('counters').insertMany(structuredClone(seed));
        const filter = (s: (typeof steps)[number]) => ({ _id: s.id, ...s.also });
        // What a step leaves: its update's counts and every document after it, or the error it failed with.
        const outcome = (run: () => Promise<unknown>) => run().then((r) => ({ r }), (e: { code?: unknown; message?: string }) => ({ e: e.code ?? e.message }));
        // A transaction a step, all started at once: they run one after another in one group, so every update
        // after a row's first may take the document the row cache kept (a failed one is undone alone).
        const g = grouped.db.collection<Counter>('counters');
        const inGroup = await Promise.all(
          steps.map((s) =>
            outcome(() =>
              grouped.withTransaction(async (session) => {
                const result = await g.updateOne(filter(s), structuredClone(s.update) as never, { session });
                return { result, docs: await g.find({}, { session }).sort({ _id: 1 }).toArray() };
              }),
            ),
          ),
        );
        // Each step in a group of its own: nothing kept from one to the next.
        const c = apart.db.collection<Counter>('counters');
        const oneByOne = [];
        for (const s of steps) {
          oneByOne.push(
            await outcome(async () => {
              const result = await c.updateOne(filter(s), structuredClone(s.update) as never);
              return { result, docs: await c.find({}).sort({ _id: 1 }).toArray() };
            }),
          );
        }
        t.deepEqual(inGroup, oneByOne);
        return true;
      } finally {
        await grouped.close();
        await apart.close();
      }
    }),
    { numRuns: Number(process.env.FUZZ_RUNS || 150) },
  );
});
