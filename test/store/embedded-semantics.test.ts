// The embedded engine's own shortcuts (index lookups, equality matchers, the fast update path)
// must agree with mingo, its reference for MongoDB semantics.
import test from 'ava';
import fc from 'fast-check';
import { find as mingoFind, update as mingoUpdate } from 'mingo';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { fastUpdate } from '../../src/store/embedded/fast-paths.ts';
import { cloneOut } from '../../src/store/embedded/values.ts';

type Doc = Record<string, unknown>;

const scalar = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom('x', 'y'), fc.constant(null));
const fieldValue = fc.oneof(scalar, scalar, fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }), fc.date({ min: new Date(0), max: new Date(3), noInvalidDate: true }));
const docArb = fc.record(
  {
    a: fieldValue,
    b: fc.record({ c: scalar }, { requiredKeys: [] }),
    d: scalar,
    // Numbers that JSON text keeps as they are (NaN, -0 and the infinities are stored otherwise).
    n: fc.oneof(
      fc.integer({ min: -1, max: 4 }),
      fc.double({ min: -5, max: 5, noNaN: true }).filter((x) => !Object.is(x, -0)),
      fc.constantFrom(Number.MAX_SAFE_INTEGER, 2 ** 53, 'x', '3', null, true),
      fc.date({ min: new Date(0), max: new Date(3), noInvalidDate: true })
    ),
  },
  { requiredKeys: [] }
);
const filterArb = fc.oneof(
  fc.record({ a: scalar }),
  fc.record({ a: fc.record({ $eq: scalar }) }),
  fc.record({ 'b.c': scalar }),
  fc.record({ a: scalar, 'b.c': scalar }),
  fc.record({ a: scalar, d: scalar }),
  fc.record({ d: scalar }),
  fc.record({ _id: fc.constantFrom('d0', 'd1', 'd5', 'nope') }),
  fc.record({ _id: fc.record({ $in: fc.array(fc.constantFrom('d0', 'd2', 'd7', 'nope'), { maxLength: 3 }) }) }),
  fc.record({ a: fc.record({ $gt: fc.integer({ min: 0, max: 3 }) }) }),
  // The comparisons the fast matcher answers, alone and beside an equality (a daily total's clamp), and
  // operands it leaves to mingo (not a number).
  fc.constantFrom('$gt', '$gte', '$lt', '$lte').chain((op) => fc.record({ _id: fc.constantFrom('d0', 'd1', 'd5'), n: fc.record({ [op]: fc.oneof(fc.integer({ min: -1, max: 4 }), fc.double({ noNaN: true }), fc.constantFrom('x', null)) }) })),
  fc.constantFrom('$gt', '$gte', '$lt', '$lte').chain((op) => fc.record({ a: fc.record({ [op]: fc.integer({ min: -1, max: 4 }) }) })),
  fc.constantFrom('$gt', '$gte', '$lt', '$lte').chain((op) => fc.record({ n: fc.record({ [op]: fc.oneof(fc.integer({ min: -1, max: 4 }), fc.double({ noNaN: true }), fc.constant(Number.MAX_SAFE_INTEGER)) }), d: scalar })),
  fc.record({ a: fc.date({ min: new Date(0), max: new Date(3), noInvalidDate: true }) })
);

test('find through indexes and matchers returns what mingo returns', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(docArb, { maxLength: 12 }), filterArb, async (raw, filter) => {
      const docs = raw.map((d, i) => ({ _id: `d${i}`, ...d }));
      const store = await openEmbeddedStore();
      try {
        const c = store.db.collection<Doc & { _id: string }>('p');
        await c.createIndex({ a: 1 });
        await c.createIndex({ d: 1, 'b.c': 1 });
        await c.createIndex({ a: 1, 'b.c': 1 });
        await c.createIndex({ d: 1, a: 1 });
        if (docs.length) await c.insertMany(docs.map(cloneOut));
        const byId = (x: Doc, y: Doc) => String(x._id).localeCompare(String(y._id));
        const got = (await c.find(filter as Doc).toArray()).sort(byId);
        const want = (mingoFind(docs, filter).all() as Doc[]).sort(byId);
        t.deepEqual(got, want, JSON.stringify(filter));
        t.is(await c.countDocuments(filter as Doc), want.length);
      } finally {
        await store.close();
      }
    }),
    { numRuns: 300 }
  );
});

const pathArb = fc.constantFrom('x', 'y', 'o.p', 'o.q', 'arr');
// Arrays without duplicates: mingo's $addToSet also de-duplicates the existing elements,
// which MongoDB does not do (the fast path follows MongoDB).
const valueArb = fc.oneof(
  fc.integer({ min: -2, max: 2 }),
  fc.constantFrom('s', 't', '1', true, false),
  fc.constant(null),
  fc.date({ min: new Date(0), max: new Date(2), noInvalidDate: true }),
  fc.uniqueArray(fc.integer({ min: 0, max: 2 }), { maxLength: 2 })
);
const updateArb = fc.oneof(
  fc.record({ $set: fc.dictionary(pathArb, valueArb, { minKeys: 1, maxKeys: 2 }) }),
  fc.record({ $unset: fc.dictionary(pathArb, fc.constant(''), { minKeys: 1, maxKeys: 2 }) }),
  fc.record({ $inc: fc.dictionary(pathArb, fc.integer({ min: -2, max: 2 }), { minKeys: 1, maxKeys: 2 }) }),
  fc.record({ $min: fc.dictionary(pathArb, valueArb, { minKeys: 1 }) }),
  fc.record({ $max: fc.dictionary(pathArb, valueArb, { minKeys: 1 }) }),
  fc.record({ $push: fc.dictionary(pathArb, fc.oneof(valueArb, fc.record({ $each: fc.array(valueArb, { maxLength: 2 }) })), { minKeys: 1 }) }),
  // $each without repeats: MongoDB adds a repeated value once, mingo twice, so that case is not a comparison with mingo.
  fc.record({ $addToSet: fc.dictionary(pathArb, fc.oneof(valueArb, fc.record({ $each: fc.uniqueArray(valueArb, { maxLength: 2, selector: (v) => JSON.stringify(v) }) })), { minKeys: 1 }) }),
  fc.record({
    $set: fc.dictionary(fc.constantFrom('x', 'o.p'), valueArb, { minKeys: 1 }),
    $inc: fc.dictionary(fc.constantFrom('y', 'o.q'), fc.integer({ min: -2, max: 2 }), { minKeys: 1 }),
  })
);
const targetArb = fc.record(
  { x: valueArb, y: valueArb, o: fc.oneof(fc.record({ p: valueArb, q: valueArb }, { requiredKeys: [] }), valueArb), arr: valueArb },
  { requiredKeys: [] }
);

test('the fast update path agrees with mingo wherever it answers', (t) => {
  let answered = 0;
  fc.assert(
    fc.property(targetArb, updateArb, (target, update) => {
      const fast = cloneOut(target) as Doc;
      const modified = fastUpdate(fast, cloneOut(update) as Doc);
      if (modified === undefined) {
        t.deepEqual(fast, target, 'a deferred update leaves the document untouched');
        return;
      }
      answered++;
      const reference = cloneOut(target) as Doc;
      const fields = mingoUpdate(reference, cloneOut(update) as never, undefined, undefined, { cloneMode: 'deep' });
      t.deepEqual(fast, reference, JSON.stringify({ target, update }));
      t.is(modified, fields.length > 0, JSON.stringify({ target, update }));
    }),
    { numRuns: 1000 }
  );
  t.true(answered > 300, `the fast path answered ${answered} of 1000`);
});

test('made-up collection names: a namespace past 255 bytes is refused, and thousands of names asked for leave the real ones as they were', async (t) => {
  const store = await openEmbeddedStore({ dataDir: ':memory:' });
  try {
    const db = store.db;
    type Row = { _id: string | number; n?: number };
    await db.collection<Row>('kept').insertOne({ _id: 'k', n: 1 });
    await db.collection('kept').createIndex({ n: 1 });
    // A reader asking for a 4 MB name is refused before anything is remembered for it.
    await t.throwsAsync(db.collection('x'.repeat(4 * 1024 * 1024)).find({}).toArray(), { message: /longer than 255 bytes/ });
    await t.throwsAsync(db.collection('y'.repeat(256)).findOne({}), { message: /longer than 255 bytes/ });
    // Past the bound on remembered names, those with no table are forgotten; the real one keeps its rows and index.
    for (let i = 0; i < 3000; i++) t.is(await db.collection(`made-up-${i}`).findOne({}), null);
    t.deepEqual(await db.collection('kept').findOne({ n: 1 }), { _id: 'k', n: 1 });
    t.deepEqual((await db.collection('kept').indexes()).map((i) => i.name), ['_id_', 'n_1']);
    t.deepEqual(await db.listCollectionNames(), ['kept']);
    await db.collection<Row>('made-up-7').insertOne({ _id: 1 });
    t.deepEqual(await db.listCollectionNames(), ['kept', 'made-up-7']);
  } finally {
    await store.close();
  }
});
