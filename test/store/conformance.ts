// The store conformance suite (docs/internals/design.md §2 and §6a): one set of tests that every
// storage engine must pass. Each test opens its own store on a fresh database.
import test from 'ava';
import type { ExecutionContext } from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agenda } from 'agenda';
import { MongoBackend } from '@agendajs/mongo-backend';
import { ObjectId } from 'mongodb';
import { hasErrorLabel, isDuplicateKeyError, type Store, type StoreSession } from '../../src/store/store.ts';
import { runCommand } from '../../src/commands/run-command.ts';

export interface ConformanceOptions {
  /** Shown in every test title, e.g. 'embedded' or 'mongodb'. */
  name: string;
  /** How long to wait for a TTL monitor pass (MongoDB's runs every 60 s unless tuned). */
  ttlDeadlineMs?: number;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test documents of every shape
interface Doc {
  _id: string;
  [key: string]: any;
}

/** A promise with its resolver, for sequencing concurrent work without timing assumptions. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

async function duplicateOf(t: ExecutionContext, work: Promise<unknown>): Promise<void> {
  const error = await t.throwsAsync(work);
  t.is((error as { code?: number }).code, 11000);
  t.true(isDuplicateKeyError(error));
}

export function registerStoreConformance(factory: () => Promise<Store>, options: ConformanceOptions): void {
  const title = (s: string) => `[${options.name}] ${s}`;

  async function open(t: ExecutionContext): Promise<Store> {
    const store = await factory();
    t.teardown(() => store.close());
    return store;
  }

  test(title('insertOne/findOne round-trip Dates, nested objects and arrays, copying in and out'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('things');
    const when = new Date('2025-03-04T05:06:07.089Z');
    const doc = { _id: 'a', when, nested: { deep: { n: 1, list: [1, 'two', { three: 3 }] } }, tags: ['x', 'y'], nil: null };
    const r = await c.insertOne(doc);
    t.deepEqual(r, { acknowledged: true, insertedId: 'a' });
    doc.nested.deep.n = 99;
    doc.tags.push('z');
    when.setTime(0);
    const got = await c.findOne({ _id: 'a' });
    t.deepEqual(got, {
      _id: 'a',
      when: new Date('2025-03-04T05:06:07.089Z'),
      nested: { deep: { n: 1, list: [1, 'two', { three: 3 }] } },
      tags: ['x', 'y'],
      nil: null,
    });
    t.true(got!.when instanceof Date);
    got!.nested.deep.n = 42;
    t.is((await c.findOne({ _id: 'a' }))!.nested.deep.n, 1);
    t.is(await c.findOne({ _id: 'missing' }), null);
    t.deepEqual(await c.findOne({ 'nested.deep.n': 1, tags: 'y' }, { projection: { _id: 0, tags: 1 } }), { tags: ['x', 'y'] });
  });

  test(title('field names that start with $ (as in Extended JSON) come back as the documents they were'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('dollars');
    // What a client may send as free-form metadata (SPEC: stored verbatim): MongoDB 5.0+ keeps
    // $-prefixed field names in embedded documents as ordinary fields.
    const metadata = {
      date: { $date: '2020-01-01T00:00:00Z' },
      oid: { $oid: '64b7f0c2a1b2c3d4e5f60718' },
      long: { $numberLong: '5' },
      mixed: { a: 1, $date: 'x' },
      regex: { $regularExpression: { pattern: 'a', options: '' } },
      marker: { $doc: { $date: 'y' } },
      list: [{ $undefined: true }, { $foo: [{ $minKey: 1 }] }],
    };
    await c.insertOne({ _id: 'm', metadata, when: new Date('2025-03-04T05:06:07.089Z') });
    const got = await c.findOne({ _id: 'm' });
    t.deepEqual(got, { _id: 'm', metadata, when: new Date('2025-03-04T05:06:07.089Z') });
    t.true(got!.when instanceof Date);
    t.deepEqual(await c.findOne({ 'metadata.mixed.a': 1 }, { projection: { _id: 1 } }), { _id: 'm' });
  });

  test(title('a field named __proto__ is stored and read back as a field, beside values that are converted (Dates)'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('proto_fields');
    // JSON.parse makes __proto__ an own field, as a client's metadata would arrive.
    const metadata = JSON.parse('{"__proto__": {"polluted": true}, "at": 1}') as Doc;
    const when = new Date('2025-03-04T05:06:07.089Z');
    // A document with such a field and a Date is the one the embedded store copies to convert.
    const dated = JSON.parse('{"__proto__": {"polluted": true}}') as Doc;
    dated.at = when;
    await c.insertOne({ _id: 'p', when, metadata, dated, again: when });
    const got = (await c.findOne({ _id: 'p' }))!;
    for (const field of [got.metadata, got.dated] as Doc[]) {
      t.deepEqual(Object.keys(field), ['__proto__', 'at']);
      t.deepEqual(Object.getOwnPropertyDescriptor(field, '__proto__')?.value, { polluted: true });
      t.is(Object.getPrototypeOf(field), Object.prototype);
    }
    t.deepEqual((got.dated as Doc).at, when);
    t.deepEqual([got.when, got.again], [when, when]);
    t.not(got.when, got.again);
    t.is(({} as Doc).polluted, undefined);
  });

  test(title('a field name with a NUL character is refused, as the driver\'s BSON serialiser refuses it: nothing is written'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('nul_keys');
    // BSON field names are C strings. A document the embedded store kept with one could not be sent
    // back through the wire listener, nor copied to a MongoDB.
    await t.throwsAsync(c.insertOne({ _id: 'k', metadata: { 'a\u0000b': 1 } }));
    await t.throwsAsync(c.updateOne({ _id: 'k' }, { $set: { metadata: { list: [{ '\u0000': 1 }] } } }, { upsert: true }));
    await c.insertOne({ _id: 'ok', metadata: { text: 'a value may hold \u0000' } });
    await t.throwsAsync(c.updateOne({ _id: 'ok' }, { $set: { 'metadata.sub': { 'x\u0000': true } } }));
    t.deepEqual(await c.find({}).toArray(), [{ _id: 'ok', metadata: { text: 'a value may hold \u0000' } }]);
  });

  test(title('onApplied: called once a transaction is applied, before it resolves; a transaction started then sees its writes; not called on failure'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<{ _id: string; n: number }>('applied');
    await store.db.createCollection('applied');
    let seenByNext: number | undefined;
    let next: Promise<void> | undefined;
    let resolved = false;
    const first = store
      .withTransaction(
        async (session) => {
          await c.insertOne({ _id: 'a', n: 1 }, { session });
          return 'done';
        },
        {
          onApplied: () => {
            t.false(resolved, 'onApplied comes before the transaction resolves');
            next = store.withTransaction(async (session) => {
              seenByNext = (await c.findOne({ _id: 'a' }, { session }))?.n;
            });
          },
        },
      )
      .then((r) => {
        resolved = true;
        return r;
      });
    t.is(await first, 'done');
    t.truthy(next, 'onApplied was called');
    await next;
    t.is(seenByNext, 1);
    let calls = 0;
    await t.throwsAsync(
      store.withTransaction(
        async (session) => {
          await c.insertOne({ _id: 'b', n: 2 }, { session });
          throw new Error('refused');
        },
        { onApplied: () => calls++ },
      ),
      { message: 'refused' },
    );
    t.is(calls, 0);
    t.is(await c.findOne({ _id: 'b' }), null);
  });

  test(title('insertOne without _id generates one; duplicate _id is code 11000'), async (t) => {
    const store = await open(t);
    const generated = store.db.collection('generated');
    const r = await generated.insertOne({ n: 1 });
    t.truthy(r.insertedId);
    t.is((await generated.findOne({ _id: r.insertedId }))!.n, 1);
    const c = store.db.collection<Doc>('things');
    await c.insertOne({ _id: 'dup', n: 1 });
    await duplicateOf(t, c.insertOne({ _id: 'dup', n: 2 }));
    t.is((await c.findOne({ _id: 'dup' }))!.n, 1);
    const many = await c.insertMany([{ _id: 'm1' }, { _id: 'm2' }]);
    t.is(many.insertedCount, 2);
    t.deepEqual(many.insertedIds, { 0: 'm1', 1: 'm2' });
  });

  test(title('collections whose names differ only in case are two collections'), async (t) => {
    const store = await open(t);
    const upper = store.db.collection<Doc>('Ledger');
    const lower = store.db.collection<Doc>('ledger');
    await upper.insertOne({ _id: 'same', side: 'upper' });
    await lower.insertOne({ _id: 'same', side: 'lower' });
    t.deepEqual(await upper.find({}).toArray(), [{ _id: 'same', side: 'upper' }]);
    t.deepEqual(await lower.find({}).toArray(), [{ _id: 'same', side: 'lower' }]);
    await lower.deleteMany({});
    t.is(await upper.countDocuments({}), 1);
  });

  test(title('$type matches ObjectIds by name and number, alone, in a list, under $or and $not, in later and $facet stages; a field named $type in a value is a field'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('typed');
    const oid = new ObjectId();
    await c.insertMany([
      { _id: 'oid', v: oid },
      { _id: 'str', v: oid.toHexString() },
      { _id: 'list', v: [1, oid] },
      { _id: 'date', v: new Date(0) },
      { _id: 'meta', v: { $type: 'objectId' } },
    ]);
    const ids = async (filter: Record<string, unknown>) => (await c.find(filter, { sort: { _id: 1 } }).toArray()).map((d) => d._id);
    t.deepEqual(await ids({ v: { $type: 'objectId' } }), ['list', 'oid']);
    t.deepEqual(await ids({ v: { $type: 7 } }), ['list', 'oid']);
    t.deepEqual(await ids({ v: { $type: ['objectId', 'string'] } }), ['list', 'oid', 'str']);
    t.deepEqual(await ids({ $or: [{ v: { $type: 'objectId' } }, { v: { $type: 'date' } }] }), ['date', 'list', 'oid']);
    t.deepEqual(await ids({ v: { $not: { $type: 'objectId' } } }), ['date', 'meta', 'str']);
    t.deepEqual(await ids({ v: { $type: 'string' } }), ['str']);
    t.deepEqual(await ids({ v: { $type: 'object' } }), ['meta']);
    // A field named $type in a value compared with is a field, not the operator.
    t.deepEqual(await ids({ v: { $eq: { $type: 'objectId' } } }), ['meta']);
    t.deepEqual(await ids({ v: { $in: [{ $type: 'objectId' }] } }), ['meta']);
    t.deepEqual(await ids({ v: { $ne: { $type: 'objectId' } } }), ['date', 'list', 'oid', 'str']);
    const staged = await c.aggregate([{ $sort: { _id: 1 } }, { $match: { v: { $type: 'objectId' } } }, { $project: { _id: 1 } }]).toArray();
    t.deepEqual(staged, [{ _id: 'list' }, { _id: 'oid' }]);
    const faceted = await c.aggregate([{ $sort: { _id: 1 } }, { $facet: { ids: [{ $match: { v: { $type: 7 } } }, { $project: { _id: 1 } }] } }]).toArray();
    t.deepEqual(faceted, [{ ids: [{ _id: 'list' }, { _id: 'oid' }] }]);
  });

  test(title('$in and $nin with a long list of strings: a field, an element of an array, a path through an array of documents; never a missing field, a null or a number'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('listed');
    await c.insertMany([
      { _id: 'plain', v: 'k3' },
      { _id: 'other', v: 'zz' },
      { _id: 'array', v: ['zz', 'k7'] },
      { _id: 'array-out', v: ['zz', 'yy'] },
      { _id: 'nested', v: [{ w: 'k9' }, { w: 'zz' }] },
      { _id: 'deep', v: [{ w: ['zz', 'k5'] }] },
      { _id: 'number', v: 3 },
      { _id: 'null', v: null },
      { _id: 'missing' },
      { _id: 'object', v: { w: 'k3' } },
    ]);
    const ids = async (filter: Record<string, unknown>) => (await c.find(filter, { sort: { _id: 1 } }).toArray()).map((d) => d._id);
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
    t.deepEqual(await ids({ v: { $in: keys } }), ['array', 'plain']);
    t.deepEqual(await ids({ 'v.w': { $in: keys } }), ['deep', 'nested', 'object']);
    t.deepEqual(await ids({ v: { $nin: keys } }), ['array-out', 'deep', 'missing', 'nested', 'null', 'number', 'object', 'other']);
    t.deepEqual(await ids({ _id: { $in: [...keys, 'plain', 'missing'] }, v: { $nin: keys } }), ['missing']);
    // The same lists with a null, or a number, in them keep MongoDB's meaning of those too.
    t.deepEqual(await ids({ v: { $in: [...keys, null] } }), ['array', 'missing', 'null', 'plain']);
    t.deepEqual(await ids({ v: { $in: [...keys, 3] } }), ['array', 'number', 'plain']);
    t.is(await c.countDocuments({ v: { $nin: [...keys, 'zz', 'yy', null, 3] } }), 3);
    t.deepEqual(await ids({ 'v.w': { $nin: keys } }), ['array', 'array-out', 'missing', 'null', 'number', 'other', 'plain']);
  });

  test(title('find: filter, sort, skip, limit, projection, async iteration; countDocuments; distinct'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('people');
    await c.insertMany([
      { _id: '1', name: 'ann', age: 30, team: 'red', tags: ['a', 'b'] },
      { _id: '2', name: 'bob', age: 25, team: 'blue', tags: ['b'] },
      { _id: '3', name: 'cid', age: 35, team: 'red', tags: [] },
      { _id: '4', name: 'dee', age: 25, team: 'red' },
      { _id: '5', name: 'eve', age: 40, team: 'blue', tags: ['c'] },
    ]);
    const names = (docs: Doc[]) => docs.map((d) => d.name);
    t.deepEqual(names(await c.find({ team: 'red' }).sort({ age: -1 }).toArray()), ['cid', 'ann', 'dee']);
    t.deepEqual(names(await c.find({}).sort({ age: 1, name: -1 }).toArray()), ['dee', 'bob', 'ann', 'cid', 'eve']);
    t.deepEqual(names(await c.find({}).sort({ age: 1, name: 1 }).skip(1).limit(2).toArray()), ['dee', 'ann']);
    t.deepEqual(names(await c.find({}, { sort: { name: -1 }, limit: 2 }).toArray()), ['eve', 'dee']);
    t.deepEqual(await c.find({ age: { $gte: 35 } }).sort({ age: 1 }).project({ _id: 0, name: 1 }).toArray(), [
      { name: 'cid' },
      { name: 'eve' },
    ]);
    t.deepEqual(await c.find({ _id: '2' }, { projection: { tags: 0, team: 0 } }).toArray(), [{ _id: '2', name: 'bob', age: 25 }]);
    const seen: string[] = [];
    for await (const d of c.find({ tags: 'b' }).sort({ _id: 1 })) seen.push(d.name);
    t.deepEqual(seen, ['ann', 'bob']);
    t.deepEqual(names(await c.find({ $or: [{ age: 25 }, { name: 'eve' }], _id: { $in: ['2', '4', '5'] } }).sort({ _id: 1 }).toArray()), [
      'bob',
      'dee',
      'eve',
    ]);
    t.is(await c.countDocuments({ team: 'red' }), 3);
    t.is(await c.countDocuments({}), 5);
    t.is(await c.countDocuments({ age: { $lt: 0 } }), 0);
    t.deepEqual((await c.distinct('team', {})).sort(), ['blue', 'red']);
    t.deepEqual((await c.distinct('tags', { team: 'red' })).sort(), ['a', 'b']);
  });

  test(title('updateOne with every operator; result counts shaped as the driver'), async (t) => {
    interface OpDoc {
      _id: string;
      n: number;
      list: number[];
      set: string[];
      lo: number;
      hi: number;
      at: Date;
      gone?: boolean;
      sub?: { x: string };
      fresh?: number;
      never?: boolean;
    }
    const store = await open(t);
    const c = store.db.collection<OpDoc>('docs');
    await c.insertOne({ _id: 'u', n: 5, gone: true, list: [1, 2, 3, 2], set: ['a'], lo: 10, hi: 10, at: new Date(1000) });
    const r = await c.updateOne(
      { _id: 'u' },
      {
        $set: { 'sub.x': 'y', at: new Date(2000) },
        $unset: { gone: '' },
        $inc: { n: 2, fresh: 1 },
        $push: { list: 9 },
        $addToSet: { set: { $each: ['a', 'b', 'b'] } },
        $min: { lo: 3 },
        $max: { hi: 20 },
        $setOnInsert: { never: true },
      }
    );
    t.deepEqual(r, { acknowledged: true, matchedCount: 1, modifiedCount: 1, upsertedCount: 0, upsertedId: null });
    t.deepEqual(await c.findOne({ _id: 'u' }), {
      _id: 'u',
      n: 7,
      list: [1, 2, 3, 2, 9],
      set: ['a', 'b'],
      lo: 3,
      hi: 20,
      at: new Date(2000),
      sub: { x: 'y' },
      fresh: 1,
    });
    await c.updateOne({ _id: 'u' }, { $pull: { list: 2 }, $min: { lo: 100 }, $max: { hi: 1 } });
    const after = await c.findOne({ _id: 'u' });
    t.deepEqual(after!.list, [1, 3, 9]);
    t.is(after!.lo, 3);
    t.is(after!.hi, 20);
    await c.updateOne({ _id: 'u' }, { $push: { list: { $each: [4, 5] } } });
    t.deepEqual((await c.findOne({ _id: 'u' }))!.list, [1, 3, 9, 4, 5]);
    const noop = await c.updateOne({ _id: 'u' }, { $set: { n: 7 } });
    t.is(noop.matchedCount, 1);
    t.is(noop.modifiedCount, 0);
    const none = await c.updateOne({ _id: 'nope' }, { $set: { n: 1 } });
    t.deepEqual(none, { acknowledged: true, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedId: null });
    t.is(await c.countDocuments({}), 1);
    await t.throwsAsync(c.updateOne({ _id: 'u' }, { n: 1 } as never));
  });

  test(title('version-filtered updates: a stale version matches nothing'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('windows');
    await c.insertOne({ _id: 'w', spent: 0, version: 1 });
    const ok = await c.updateOne({ _id: 'w', version: 1 }, { $set: { spent: 10, version: 2 } });
    t.is(ok.matchedCount, 1);
    const stale = await c.updateOne({ _id: 'w', version: 1 }, { $set: { spent: 20, version: 2 } });
    t.is(stale.matchedCount, 0);
    t.deepEqual(await c.findOne({ _id: 'w' }), { _id: 'w', spent: 10, version: 2 });
  });

  test(title('bulkWrite: updateOne operations in order, with upserts, counted as the driver counts them'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('bulk');
    await c.insertMany([{ _id: 'a', n: 1 }, { _id: 'b', n: 1 }]);
    const result = await c.bulkWrite([
      { updateOne: { filter: { _id: 'a' }, update: { $inc: { n: 1 } } } },
      { updateOne: { filter: { _id: 'b' }, update: { $set: { n: 1 } } } },
      { updateOne: { filter: { _id: 'c' }, update: { $set: { n: 5 } }, upsert: true } },
      { updateOne: { filter: { _id: 'a' }, update: { $inc: { n: 10 } } } },
      { updateOne: { filter: { _id: 'zz' }, update: { $inc: { n: 1 } } } },
    ]);
    t.like(result, { matchedCount: 3, modifiedCount: 2, upsertedCount: 1, insertedCount: 0, deletedCount: 0 });
    t.deepEqual(result.upsertedIds, { 2: 'c' });
    t.deepEqual(await c.find({}).sort({ _id: 1 }).toArray(), [{ _id: 'a', n: 12 }, { _id: 'b', n: 1 }, { _id: 'c', n: 5 }]);
  });

  test(title('bulkWrite: ordered, it stops at a duplicate key (code 11000) and keeps what came before; in a transaction it rolls back'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('bulk');
    await c.createIndex({ email: 1 }, { unique: true });
    await c.insertOne({ _id: 'taken', email: 'x@example.com' });
    await duplicateOf(
      t,
      c.bulkWrite([
        { updateOne: { filter: { _id: 'one' }, update: { $set: { email: 'one@example.com' } }, upsert: true } },
        { updateOne: { filter: { _id: 'two' }, update: { $set: { email: 'x@example.com' } }, upsert: true } },
        { updateOne: { filter: { _id: 'three' }, update: { $set: { email: 'three@example.com' } }, upsert: true } },
      ]),
    );
    t.deepEqual((await c.find({}).sort({ _id: 1 }).toArray()).map((d) => d._id), ['one', 'taken']);
    await t.throwsAsync(
      store.withTransaction(async (session) => {
        await c.bulkWrite([{ updateOne: { filter: { _id: 'four' }, update: { $set: { email: 'four@example.com' } }, upsert: true } }], { session });
        throw new Error('changed my mind');
      }),
      { message: 'changed my mind' },
    );
    t.is(await c.countDocuments({ _id: 'four' }), 0);
  });

  test(title('bulkWrite: version-checked updates and create-only upserts (the budget windows write) in one call'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('windows');
    await c.insertMany([{ _id: 'w1', n: 1, version: 1 }, { _id: 'w2', n: 1, version: 1 }]);
    const write = (version: number, created: string) =>
      c.bulkWrite([
        { updateOne: { filter: { _id: 'w1', version }, update: { $set: { n: 2, version: version + 1 } } } },
        { updateOne: { filter: { _id: created, version: { $exists: false } }, update: { $setOnInsert: { n: 5, version: 1 } }, upsert: true } },
      ]);
    const fresh = await write(1, 'w3');
    t.like(fresh, { matchedCount: 1, upsertedCount: 1 });
    t.deepEqual(await c.findOne({ _id: 'w3' }), { _id: 'w3', n: 5, version: 1 });
    // The version moved: the update matches nothing, and nothing says so but the counts.
    const stale = await write(1, 'w4');
    t.like(stale, { matchedCount: 0, upsertedCount: 1 });
    // The window exists already: the create-only upsert is a duplicate key, not a second document.
    await duplicateOf(t, write(2, 'w2'));
    t.deepEqual(await c.findOne({ _id: 'w2' }), { _id: 'w2', n: 1, version: 1 });
  });

  const nsOf = (store: Store, collection: string) => `${store.db.raw.databaseName}.${collection}`;

  test(title('client bulkWrite: writes to several collections in order, with the driver\'s totals and verbose per-model results'), async (t) => {
    const store = await open(t);
    const [a, b] = [nsOf(store, 'bulk_a'), nsOf(store, 'bulk_b')];
    await store.db.collection<Doc>('bulk_b').insertMany([{ _id: 'x', n: 1, version: 1 }, { _id: 'gone', n: 0 }]);
    const result = await store.db.bulkWrite(
      [
        { namespace: a, name: 'insertOne', document: { _id: 'one', n: 1 } },
        { namespace: b, name: 'updateOne', filter: { _id: 'x', version: 1 }, update: { $inc: { n: 1, version: 1 } } },
        { namespace: b, name: 'updateOne', filter: { _id: 'x', version: 1 }, update: { $inc: { n: 100 } } },
        { namespace: b, name: 'updateOne', filter: { _id: 'new', version: { $exists: false } }, update: { $setOnInsert: { n: 7, version: 1 } }, upsert: true },
        { namespace: a, name: 'replaceOne', filter: { _id: 'one' }, replacement: { n: 2 } },
        { namespace: b, name: 'deleteOne', filter: { _id: 'gone' } },
      ],
      { verboseResults: true },
    );
    t.like(result, { insertedCount: 1, matchedCount: 2, modifiedCount: 2, upsertedCount: 1, deletedCount: 1 });
    t.deepEqual(result.insertResults?.get(0), { insertedId: 'one' });
    t.like(result.updateResults?.get(1), { matchedCount: 1, modifiedCount: 1, didUpsert: false });
    t.like(result.updateResults?.get(2), { matchedCount: 0, modifiedCount: 0, didUpsert: false }, 'a version that moved matches nothing');
    t.like(result.updateResults?.get(3), { didUpsert: true, upsertedId: 'new' });
    t.deepEqual(result.deleteResults?.get(5), { deletedCount: 1 });
    t.deepEqual(await store.db.collection<Doc>('bulk_a').find({}).toArray(), [{ _id: 'one', n: 2 }]);
    t.deepEqual(await store.db.collection<Doc>('bulk_b').find({}).sort({ _id: 1 }).toArray(), [{ _id: 'new', n: 7, version: 1 }, { _id: 'x', n: 2, version: 2 }]);
  });

  test(title('client bulkWrite: ordered, a duplicate key stops it at that model (writeErrors keyed by index); in a transaction nothing stays'), async (t) => {
    const store = await open(t);
    const ns = nsOf(store, 'bulk_keys');
    const c = store.db.collection<Doc>('bulk_keys');
    await c.insertOne({ _id: 'taken' });
    const write = (session?: StoreSession) =>
      store.db.bulkWrite(
        [
          { namespace: ns, name: 'insertOne', document: { _id: 'first' } },
          { namespace: ns, name: 'insertOne', document: { _id: 'taken' } },
          { namespace: ns, name: 'insertOne', document: { _id: 'never' } },
        ],
        session ? { session } : {},
      );
    const error = (await t.throwsAsync(write())) as Error & { writeErrors: Map<number, { code: number }> };
    t.is(error.name, 'MongoClientBulkWriteError');
    t.deepEqual([...error.writeErrors.keys()], [1]);
    t.is(error.writeErrors.get(1)!.code, 11000);
    t.true(isDuplicateKeyError(error));
    t.deepEqual((await c.find({}).sort({ _id: 1 }).toArray()).map((d) => d._id), ['first', 'taken']);

    await c.deleteOne({ _id: 'first' });
    await t.throwsAsync(store.withTransaction((session) => write(session)));
    t.deepEqual((await c.find({}).toArray()).map((d) => d._id), ['taken'], 'the transaction rolled back the write before the duplicate');
    await store.withTransaction(async (session) => {
      await store.db.bulkWrite([{ namespace: ns, name: 'insertOne', document: { _id: 'in-tx' } }, { namespace: nsOf(store, 'bulk_other'), name: 'insertOne', document: { _id: 'also' } }], { session });
    });
    t.is(await c.countDocuments({ _id: 'in-tx' }), 1);
    t.is(await store.db.collection('bulk_other').countDocuments({}), 1);
  });

  test(title('client bulkWrite: ordered, an update refused for another reason than a key ($inc by a string) stops it there, and the models before it stay written'), async (t) => {
    const store = await open(t);
    const ns = nsOf(store, 'bulk_refused');
    const c = store.db.collection<Doc>('bulk_refused');
    await c.insertOne({ _id: 'counter', n: 1 });
    // MongoDB answers a write error (TypeMismatch) for the second model; as with a duplicate key, the
    // first stays written and the third never runs. The collection-level bulkWrite does the same.
    await t.throwsAsync(
      store.db.bulkWrite([
        { namespace: ns, name: 'insertOne', document: { _id: 'before' } },
        { namespace: ns, name: 'updateOne', filter: { _id: 'counter' }, update: { $inc: { n: 'one' } } as never },
        { namespace: ns, name: 'insertOne', document: { _id: 'after' } },
      ]),
    );
    t.deepEqual((await c.find({}).sort({ _id: 1 }).toArray()).map((d) => d._id), ['before', 'counter']);
    t.deepEqual(await c.findOne({ _id: 'counter' }), { _id: 'counter', n: 1 });
  });


  test(title('$inc and $mul refuse a non-numeric field or argument with TypeMismatch (14), and change nothing'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('arithmetic');
    await c.insertOne({ _id: 'x', n: 1, s: 'text', z: null, o: { deep: 'text' } });
    for (const update of [{ $inc: { s: 1 } }, { $inc: { z: 1 } }, { $inc: { 'o.deep': 1 } }, { $mul: { s: 2 } }, { $inc: { n: 'one' } }, { $mul: { n: true } }, { $inc: { n: 1, s: 1 } }]) {
      const error = await t.throwsAsync(c.updateOne({ _id: 'x' }, update as never), undefined, JSON.stringify(update));
      t.is((error as { code?: unknown }).code, 14, JSON.stringify(update));
    }
    t.deepEqual(await c.findOne({ _id: 'x' }), { _id: 'x', n: 1, s: 'text', z: null, o: { deep: 'text' } });
    await c.updateOne({ _id: 'x' }, { $inc: { n: 2, missing: 5 }, $mul: { absent: 3 } });
    t.deepEqual(await c.findOne({ _id: 'x' }), { _id: 'x', n: 3, s: 'text', z: null, o: { deep: 'text' }, missing: 5, absent: 0 });
  });

  test(title('an inserted document whose _id is undefined or null gets an ObjectId, on the caller\'s document too, through every insert'), async (t) => {
    const store = await open(t);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- _id deliberately undefined or null
    const c = store.db.collection<any>('nullish_ids');
    // The driver gives a document an ObjectId when its _id == null (maybeAddIdToDocuments, and the
    // client bulk write's `_id ?? createPk()`), before it sends it: an optional field spread as
    // undefined is not an _id of null, nor a duplicate of the next one.
    const docs = [{ _id: undefined, n: 1 }, { _id: null, n: 2 }, { _id: undefined, n: 3 }, { _id: null, n: 4 }, { _id: undefined, n: 5 }];
    const { insertedId } = await c.insertOne(docs[0]);
    await c.insertMany([docs[1], docs[2]]);
    await c.bulkWrite([{ insertOne: { document: docs[3] } }]);
    await store.db.bulkWrite([{ namespace: nsOf(store, 'nullish_ids'), name: 'insertOne', document: docs[4] as never }]);
    t.is((insertedId as { _bsontype?: string })._bsontype, 'ObjectId');
    for (const doc of docs) t.is((doc._id as { _bsontype?: string } | null)?._bsontype, 'ObjectId', `n: ${doc.n}`);
    t.is(await c.countDocuments({}), 5);
    t.is(await c.countDocuments({ _id: null }), 0);
    t.deepEqual((await c.find({}).sort({ n: 1 }).toArray()).map((d) => String(d._id)), docs.map((d) => String(d._id)));
  });
  test(title('an upsert whose filter is {_id: null} inserts a document whose _id is null (the driver\'s rule for inserts is not the server\'s)'), async (t) => {
    const store = await open(t);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- _id deliberately null
    const c = store.db.collection<any>('null_upserts');
    const result = await c.updateOne({ _id: null }, { $set: { n: 1 } }, { upsert: true });
    t.is(result.upsertedCount, 1);
    t.is(result.upsertedId, null);
    t.deepEqual(await c.find({}).toArray(), [{ _id: null, n: 1 }]);
    t.is((await c.updateOne({ _id: null }, { $inc: { n: 1 } }, { upsert: true })).matchedCount, 1);
    t.deepEqual(await c.findOne({ _id: null }), { _id: null, n: 2 });
  });
  test(title('upsert inserts from the filter and $setOnInsert, then matches'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('counters');
    const first = await c.updateOne(
      { _id: 'k', kind: 'a' },
      { $inc: { n: 1 }, $setOnInsert: { createdAt: new Date(5) } },
      { upsert: true }
    );
    t.deepEqual(first, { acknowledged: true, matchedCount: 0, modifiedCount: 0, upsertedCount: 1, upsertedId: 'k' });
    const second = await c.updateOne(
      { _id: 'k', kind: 'a' },
      { $inc: { n: 1 }, $setOnInsert: { createdAt: new Date(6) } },
      { upsert: true }
    );
    t.deepEqual(second, { acknowledged: true, matchedCount: 1, modifiedCount: 1, upsertedCount: 0, upsertedId: null });
    t.deepEqual(await c.findOne({ _id: 'k' }), { _id: 'k', kind: 'a', n: 2, createdAt: new Date(5) });
    const loose = store.db.collection('loose');
    const generated = await loose.updateOne({ name: 'z' }, { $set: { v: 1 } }, { upsert: true });
    t.is(generated.upsertedCount, 1);
    t.truthy(generated.upsertedId);
    t.deepEqual(await loose.findOne({ _id: generated.upsertedId! }, { projection: { _id: 0 } }), { name: 'z', v: 1 });
  });

  test(title('updateMany, replaceOne, deleteOne, deleteMany'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('items');
    await c.insertMany([1, 2, 3, 4, 5].map((i) => ({ _id: `i${i}`, i, odd: i % 2 === 1 })));
    const many = await c.updateMany({ odd: true }, { $set: { flag: 'x' } });
    t.is(many.matchedCount, 3);
    t.is(many.modifiedCount, 3);
    t.is(await c.countDocuments({ flag: 'x' }), 3);
    const rep = await c.replaceOne({ _id: 'i2' }, { i: 20, replaced: true });
    t.is(rep.matchedCount, 1);
    t.is(rep.modifiedCount, 1);
    t.deepEqual(await c.findOne({ _id: 'i2' }), { _id: 'i2', i: 20, replaced: true });
    const repUpsert = await c.replaceOne({ _id: 'i9' }, { i: 9 }, { upsert: true });
    t.is(repUpsert.upsertedId, 'i9');
    t.deepEqual(await c.findOne({ _id: 'i9' }), { _id: 'i9', i: 9 });
    t.deepEqual(await c.deleteOne({ odd: true }), { acknowledged: true, deletedCount: 1 });
    t.deepEqual(await c.deleteMany({ odd: true }), { acknowledged: true, deletedCount: 2 });
    t.deepEqual(await c.deleteOne({ _id: 'none' }), { acknowledged: true, deletedCount: 0 });
    t.deepEqual((await c.find({}).sort({ _id: 1 }).toArray()).map((d) => d._id), ['i2', 'i4', 'i9']);
  });

  test(title('findOneAndUpdate: before/after, sort, projection, upsert, null when nothing matches'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('jobs');
    await c.insertMany([
      { _id: 'j1', prio: 1, state: 'new' },
      { _id: 'j2', prio: 3, state: 'new' },
      { _id: 'j3', prio: 2, state: 'new' },
    ]);
    const before = await c.findOneAndUpdate({ state: 'new' }, { $set: { state: 'taken' } }, { sort: { prio: -1 }, returnDocument: 'before' });
    t.deepEqual(before, { _id: 'j2', prio: 3, state: 'new' });
    const after = await c.findOneAndUpdate(
      { state: 'new' },
      { $set: { state: 'taken' } },
      { sort: { prio: -1 }, returnDocument: 'after', projection: { _id: 1, state: 1 } }
    );
    t.deepEqual(after, { _id: 'j3', state: 'taken' });
    const byDefault = await c.findOneAndUpdate({ _id: 'j1' }, { $inc: { prio: 10 } });
    t.deepEqual(byDefault, { _id: 'j1', prio: 1, state: 'new' });
    t.is(await c.findOneAndUpdate({ state: 'missing' }, { $set: { x: 1 } }), null);
    const upserted = await c.findOneAndUpdate({ _id: 'j4' }, { $set: { state: 'new' } }, { upsert: true, returnDocument: 'after' });
    t.deepEqual(upserted, { _id: 'j4', state: 'new' });
    const upsertedBefore = await c.findOneAndUpdate({ _id: 'j5' }, { $set: { state: 'new' } }, { upsert: true, returnDocument: 'before' });
    t.is(upsertedBefore, null);
    t.is(await c.countDocuments({}), 5);
  });

  test(title('aggregate: $match, $group with $sum, $sort'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('spend');
    await c.insertMany([
      { _id: '1', org: 'o', cat: 'travel', amount: 100 },
      { _id: '2', org: 'o', cat: 'food', amount: 30 },
      { _id: '3', org: 'o', cat: 'travel', amount: 50 },
      { _id: '4', org: 'p', cat: 'travel', amount: 1000 },
      { _id: '5', org: 'o', cat: 'food', amount: 5 },
    ]);
    const rows = await c
      .aggregate([
        { $match: { org: 'o' } },
        { $group: { _id: '$cat', total: { $sum: '$amount' }, count: { $sum: 1 } } },
        { $sort: { total: -1 } },
      ])
      .toArray();
    t.deepEqual(rows, [
      { _id: 'travel', total: 150, count: 2 },
      { _id: 'food', total: 35, count: 2 },
    ]);
  });

  test(title('aggregate: $sample gives distinct documents, at most as many as there are, none from an empty collection; a negative size is refused'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('sampled');
    t.deepEqual(await c.aggregate([{ $sample: { size: 3 } }]).toArray(), []);
    await c.insertMany([{ _id: 'a' }, { _id: 'b' }, { _id: 'c' }]);
    for (let round = 0; round < 20; round++) {
      const all = (await c.aggregate([{ $sample: { size: 10 } }]).toArray()).map((d) => d._id).sort();
      t.deepEqual(all, ['a', 'b', 'c']);
      const two = (await c.aggregate([{ $sample: { size: 2 } }]).toArray()).map((d) => d._id);
      t.is(new Set(two).size, 2);
    }
    await t.throwsAsync(c.aggregate([{ $sample: { size: -1 } }]).toArray());
  });

  test(title('unique indexes: duplicates are code 11000 on insert, update and upsert'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('users');
    const name = await c.createIndex({ email: 1 }, { unique: true });
    t.is(typeof name, 'string');
    t.is(await c.createIndex({ email: 1 }, { unique: true }), name);
    await c.createIndex({ org: 1, handle: 1 }, { unique: true });
    await c.insertOne({ _id: 'u1', email: 'a@x', org: 'o', handle: 'h' });
    await c.insertOne({ _id: 'u2', email: 'b@x', org: 'p', handle: 'h' });
    await duplicateOf(t, c.insertOne({ _id: 'u3', email: 'a@x', org: 'q', handle: 'h' }));
    await duplicateOf(t, c.insertOne({ _id: 'u3', email: 'c@x', org: 'o', handle: 'h' }));
    await duplicateOf(t, c.updateOne({ _id: 'u2' }, { $set: { email: 'a@x' } }));
    await duplicateOf(t, c.updateOne({ _id: 'u9' }, { $set: { email: 'b@x', org: 'z', handle: 'z' } }, { upsert: true }));
    t.is(await c.countDocuments({}), 2);
    t.is((await c.findOne({ email: 'b@x' }))!._id, 'u2');
    await c.updateOne({ _id: 'u1' }, { $set: { email: 'new@x' } });
    await c.insertOne({ _id: 'u3', email: 'a@x', org: 'o', handle: 'other' });
    t.is((await c.findOne({ email: 'a@x' }))!._id, 'u3');
    t.is((await c.findOne({ org: 'o', handle: 'h' }))!._id, 'u1');
  });

  test(title('a duplicate names the unique index it breaks, and no index key of the refused document stays'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('members');
    await c.createIndex({ tags: 1 });
    await c.createIndex({ email: 1 }, { unique: true });
    await c.createIndex({ org: 1, handle: 1 }, { unique: true });
    await c.insertOne({ _id: 'm1', tags: ['a', 'b'], email: 'a@x', org: 'o', handle: 'h' });
    const byEmail = await t.throwsAsync(c.insertOne({ _id: 'm2', tags: ['b', 'c'], email: 'a@x', org: 'o', handle: 'i' }));
    t.like(byEmail, { code: 11000, keyPattern: { email: 1 }, keyValue: { email: 'a@x' } });
    const byHandle = await t.throwsAsync(c.insertOne({ _id: 'm2', tags: ['c', 'd'], email: 'b@x', org: 'o', handle: 'h' }));
    t.like(byHandle, { code: 11000, keyPattern: { org: 1, handle: 1 }, keyValue: { org: 'o', handle: 'h' } });
    t.deepEqual(await c.find({ tags: { $in: ['c', 'd'] } }).toArray(), []);
    t.deepEqual((await c.find({ tags: 'b' }).toArray()).map((d) => d._id), ['m1']);
    await c.insertOne({ _id: 'm2', tags: ['c'], email: 'b@x', org: 'o', handle: 'i' });
    t.deepEqual((await c.find({ tags: 'c' }).toArray()).map((d) => d._id), ['m2']);
    t.deepEqual((await c.find({ email: 'b@x' }).toArray()).map((d) => d._id), ['m2']);
    // A key the refused m2 left behind would now answer for the m2 that was stored (the same row).
    t.deepEqual((await c.find({ tags: 'd' }).toArray()).map((d) => d._id), []);
    t.deepEqual((await c.find({ tags: 'b' }).toArray()).map((d) => d._id), ['m1']);
  });

  test(title('an index on a field named like a JavaScript built-in (constructor, toString) sees it missing where a document lacks it'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('builtins');
    await c.createIndex({ constructor: 1 });
    await c.createIndex({ 'meta.toString': 1 }, { unique: true, sparse: true });
    await c.insertMany([{ _id: 'a' }, { _id: 'b', constructor: null }, { _id: 'c', constructor: 'x', meta: { y: 1 } }, { _id: 'd', meta: { y: 2 } }]);
    t.deepEqual((await c.find({ constructor: null }).toArray()).map((d) => d._id).sort(), ['a', 'b', 'd']);
    t.deepEqual((await c.find({ constructor: 'x' }).toArray()).map((d) => d._id), ['c']);
    // Sparse: documents without meta.toString have no key, so two of them are no duplicate.
    await c.insertOne({ _id: 'e', meta: { toString: 't' } });
    await duplicateOf(t, c.insertOne({ _id: 'f', meta: { toString: 't' } }));
    t.deepEqual((await c.find({ 'meta.toString': 't' }).toArray()).map((d) => d._id), ['e']);
  });

  test(title('dropIndex removes an index and its keys; a missing name is IndexNotFound (27); _id_ cannot be dropped'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('people');
    await c.createIndex({ email: 1 }, { unique: true });
    await c.createIndex({ org: 1, handle: 1 });
    await c.insertMany([{ _id: 'a', email: 'a@x', org: 'o', handle: 'h' }, { _id: 'b', email: 'b@x', org: 'o', handle: 'i' }]);
    t.like(await c.dropIndex('email_1'), { nIndexesWas: 3, ok: 1 });
    t.deepEqual((await c.indexes()).map((i) => i.name), ['_id_', 'org_1_handle_1']);
    // No key of it is left to enforce uniqueness or to answer a lookup.
    await c.insertOne({ _id: 'c', email: 'a@x', org: 'p', handle: 'h' });
    t.deepEqual((await c.find({ email: 'a@x' }).toArray()).map((d) => d._id).sort(), ['a', 'c']);
    t.is((await t.throwsAsync(c.createIndex({ email: 1 }, { unique: true })) as { code?: number }).code, 11000);
    t.deepEqual((await c.find({ org: 'o', handle: 'i' }).toArray()).map((d) => d._id), ['b'], 'the other index still answers');

    const missing = (await t.throwsAsync(c.dropIndex('email_1'))) as { code?: number; codeName?: string };
    t.deepEqual([missing.code, missing.codeName], [27, 'IndexNotFound']);
    const id = (await t.throwsAsync(c.dropIndex('_id_'))) as { code?: number; codeName?: string };
    t.deepEqual([id.code, id.codeName], [72, 'InvalidOptions']);
    t.deepEqual((await c.indexes()).map((i) => i.name), ['_id_', 'org_1_handle_1']);
    // Created again, it indexes every document.
    await c.deleteOne({ _id: 'c' });
    await c.createIndex({ email: 1 }, { unique: true });
    await duplicateOf(t, c.insertOne({ _id: 'd', email: 'b@x' }));
    t.is((await c.findOne({ email: 'b@x' }))!._id, 'b');
  });

  test(title('TTL indexes remove expired documents'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('idempotency');
    await c.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0 });
    await c.insertMany([
      { _id: 'old', expiresAt: new Date(Date.now() - 60_000) },
      { _id: 'new', expiresAt: new Date(Date.now() + 3_600_000) },
    ]);
    const deadline = Date.now() + (options.ttlDeadlineMs ?? 10_000);
    while ((await c.findOne({ _id: 'old' })) !== null && Date.now() < deadline) await sleep(50);
    t.is(await c.findOne({ _id: 'old' }), null);
    t.truthy(await c.findOne({ _id: 'new' }));
  });

  test(title('listCollectionNames lists collections that hold documents'), async (t) => {
    const store = await open(t);
    t.deepEqual(await store.db.listCollectionNames(), []);
    await store.db.collection<Doc>('alpha').insertOne({ _id: 'a' });
    await store.db.collection<Doc>('beta').insertOne({ _id: 'b' });
    t.deepEqual((await store.db.listCollectionNames()).sort(), ['alpha', 'beta']);
  });

  test(title('transaction commit makes every write visible'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('acct');
    await c.insertMany([{ _id: 'keep', v: 1 }, { _id: 'drop', v: 1 }]);
    const result = await store.withTransaction(async (session) => {
      await c.insertOne({ _id: 'new', v: 1 }, { session });
      await c.updateOne({ _id: 'keep' }, { $inc: { v: 1 } }, { session });
      await c.deleteOne({ _id: 'drop' }, { session });
      t.is((await c.findOne({ _id: 'keep' }, { session }))!.v, 2, 'the transaction reads its own writes');
      return 'done';
    });
    t.is(result, 'done');
    t.deepEqual(await c.find({}).sort({ _id: 1 }).toArray(), [
      { _id: 'keep', v: 2 },
      { _id: 'new', v: 1 },
    ]);
  });

  test(title('a throwing transaction leaves no write behind: inserts, updates, deletes, new collections'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('acct');
    await c.createIndex({ email: 1 }, { unique: true });
    await c.insertMany([
      { _id: 'a', v: 1, email: 'a@x' },
      { _id: 'b', v: 1, email: 'b@x' },
    ]);
    const snapshot = await c.find({}).sort({ _id: 1 }).toArray();
    const boom = new Error('boom');
    const error = await t.throwsAsync(
      store.withTransaction(async (session) => {
        await c.insertOne({ _id: 'c', v: 1, email: 'c@x' }, { session });
        await c.updateOne({ _id: 'a' }, { $set: { v: 2, email: 'z@x' } }, { session });
        await c.updateMany({}, { $inc: { v: 10 } }, { session });
        await c.deleteOne({ _id: 'b' }, { session });
        await c.insertOne({ _id: 'b2', email: 'b@x' }, { session });
        await c.findOneAndUpdate({ _id: 'zz' }, { $set: { v: 1 } }, { upsert: true, session });
        await store.db.collection<Doc>('fresh').insertOne({ _id: 'f' }, { session });
        throw boom;
      })
    );
    t.is(error, boom);
    t.deepEqual(await c.find({}).sort({ _id: 1 }).toArray(), snapshot);
    t.is(await store.db.collection<Doc>('fresh').countDocuments({}), 0);
    t.false((await store.db.listCollectionNames()).includes('fresh'));
    // The unique index is intact: the rolled-back email changes freed and took nothing.
    await duplicateOf(t, c.insertOne({ _id: 'x', email: 'a@x' }));
    await c.insertOne({ _id: 'y', email: 'z@x' });
    t.is(await c.countDocuments({}), 3);
  });

  test(title('a duplicate key inside a transaction rolls everything back'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('acct');
    await c.insertOne({ _id: 'a', v: 1 });
    const error = await t.throwsAsync(
      store.withTransaction(async (session) => {
        await c.updateOne({ _id: 'a' }, { $set: { v: 2 } }, { session });
        await c.insertOne({ _id: 'n', v: 1 }, { session });
        await c.insertOne({ _id: 'a', v: 3 }, { session });
      })
    );
    t.true(isDuplicateKeyError(error));
    t.deepEqual(await c.find({}).toArray(), [{ _id: 'a', v: 1 }]);
  });

  test(title('a write that fails inside a transaction aborts it, as on MongoDB: a later operation, or the commit, is NoSuchTransaction (251) and nothing stays'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('aborted');
    await c.insertOne({ _id: 'a', v: 1 });
    // The callback catches the duplicate and goes on: the next operation is refused.
    const next = await t.throwsAsync(
      store.withTransaction(async (session) => {
        await c.updateOne({ _id: 'a' }, { $set: { v: 2 } }, { session });
        await t.throwsAsync(c.insertOne({ _id: 'a' }, { session }));
        await c.insertOne({ _id: 'after' }, { session });
      }),
    );
    t.is((next as { code?: number }).code, 251);
    // It catches the duplicate (in a bulk write, after a model that was written) and returns: the commit is refused.
    const commit = await t.throwsAsync(
      store.withTransaction(async (session) => {
        await c.updateOne({ _id: 'a' }, { $set: { v: 3 } }, { session });
        await t.throwsAsync(c.bulkWrite([{ insertOne: { document: { _id: 'b' } } }, { insertOne: { document: { _id: 'a' } } }], { session }));
      }),
    );
    t.is((commit as { code?: number }).code, 251);
    t.deepEqual(await c.find({}).toArray(), [{ _id: 'a', v: 1 }]);
  });

  test(title('an argument error the driver raises before sending anything leaves the transaction usable (bad sort direction, NUL key in a document, an update, a replacement or an upsert\'s filter)'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('client_side');
    await c.insertOne({ _id: 'a', v: 1 });
    await store.withTransaction(async (session) => {
      await c.updateOne({ _id: 'a' }, { $set: { v: 2 } }, { session });
      // MongoDB: the driver's formatSort / BSON serialiser throw; the server never sees the command.
      await t.throwsAsync(c.findOneAndUpdate({ _id: 'a' }, { $set: { v: 3 } }, { sort: { v: 'sideways' } as never, session }));
      await t.throwsAsync(async () => c.find({}, { sort: { v: 7 } as never, session }).toArray());
      await t.throwsAsync(c.findOne({}, { sort: { v: 'up' } as never, session }));
      await t.throwsAsync(c.insertOne({ _id: 'nul', metadata: { 'a\u0000b': 1 } }, { session }));
      await t.throwsAsync(c.updateOne({ _id: 'a' }, { $set: { 'a\u0000b': 1 } }, { session }));
      await t.throwsAsync(c.updateMany({}, { $set: { metadata: { list: [{ '\u0000': 1 }] } } }, { session }));
      await t.throwsAsync(c.replaceOne({ _id: 'a' }, { v: 9, metadata: { 'x\u0000': true } }, { session }));
      await t.throwsAsync(c.bulkWrite([{ updateOne: { filter: { _id: 'a' }, update: { $set: { 'k\u0000': 1 } } } }], { session }));
      await t.throwsAsync(c.bulkWrite([{ insertOne: { document: { _id: 'nul2', 'k\u0000': 1 } } }], { session }));
      await t.throwsAsync(c.updateOne({ _id: 'up', 'f\u0000': 1 }, { $set: { v: 1 } }, { upsert: true, session }));
      await c.insertOne({ _id: 'b' }, { session });
    });
    t.deepEqual(await c.find({}).toArray(), [{ _id: 'a', v: 2 }, { _id: 'b' }]);
  });

  test(title('a read that fails inside a transaction aborts it, as every failed command does on MongoDB'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('failed_read');
    await c.insertOne({ _id: 'a', v: 1 });
    const error = await t.throwsAsync(
      store.withTransaction(async (session) => {
        await c.updateOne({ _id: 'a' }, { $set: { v: 2 } }, { session });
        await t.throwsAsync(c.findOne({ v: { $bogus: 1 } }, { session }));
      }),
    );
    t.is((error as { code?: number }).code, 251);
    t.deepEqual(await c.find({}).toArray(), [{ _id: 'a', v: 1 }]);
  });

  test(title('NoSuchTransaction after a failed write carries TransientTransactionError, at the next operation and at the commit'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('aborted_labels');
    await c.insertOne({ _id: 'a' });
    const next = await t.throwsAsync(
      store.withTransaction(async (session) => {
        await t.throwsAsync(c.insertOne({ _id: 'a' }, { session }));
        await c.insertOne({ _id: 'after' }, { session });
      }),
    );
    t.is((next as { code?: number }).code, 251);
    t.true(hasErrorLabel(next, 'TransientTransactionError'), 'operation after the failure');
    const commit = await t.throwsAsync(
      store.withTransaction(async (session) => {
        await t.throwsAsync(c.insertOne({ _id: 'a' }, { session }));
      }),
    );
    t.is((commit as { code?: number }).code, 251);
    t.true(hasErrorLabel(commit, 'TransientTransactionError'), 'commit');
  });

  test(title('an unordered client bulkWrite inside a transaction stops at its first failed model (MongoDB fails the whole batch)'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('unordered_txn');
    await c.insertOne({ _id: 'a' });
    const ns = nsOf(store, 'unordered_txn');
    let bulk: { writeErrors?: Map<number, unknown>; partialResult?: { insertedCount: number } } | undefined;
    const error = await t.throwsAsync(
      store.withTransaction(async (session) => {
        bulk = (await t.throwsAsync(
          store.db.bulkWrite(
            [
              { name: 'insertOne', namespace: ns, document: { _id: 'a' } },
              { name: 'insertOne', namespace: ns, document: { _id: 'b' } },
              { name: 'insertOne', namespace: ns, document: { _id: 'a' } },
            ],
            { ordered: false, verboseResults: true, session },
          ),
        )) as typeof bulk;
      }),
    );
    t.is((error as { code?: number }).code, 251);
    t.deepEqual([...(bulk?.writeErrors?.keys() ?? [])], [0], 'only the first failure: nothing ran after it');
    t.is(bulk?.partialResult?.insertedCount ?? 0, 0);
    t.deepEqual(await c.find({}).toArray(), [{ _id: 'a' }]);
  });

  test(title('findOneAndUpdate returning the document as it was keeps a field named __proto__ in the stored document'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('proto_fau');
    await c.insertOne({ _id: 'p', meta: JSON.parse('{"__proto__": {"x": 1}, "k": 1}') as Doc });
    await c.findOneAndUpdate({ _id: 'p' }, { $set: { v: 2 } });
    const got = (await c.findOne({ _id: 'p' }))!;
    t.deepEqual(Object.keys(got.meta as Doc), ['__proto__', 'k']);
    t.deepEqual(Object.getOwnPropertyDescriptor(got.meta, '__proto__')?.value, { x: 1 });
  });

  test(title('an update of a path through __proto__ never reaches Object.prototype'), async (t) => {
    const store = await open(t);
    // A name of this test's own: the suite's stores run concurrently in one process.
    const field = `polluted_${options.name.replace(/\W/g, '_')}`;
    t.teardown(() => void delete (Object.prototype as Doc)[field]);
    const c = store.db.collection<Doc>('proto_path');
    await c.insertOne({ _id: 'a', v: 1 });
    // MongoDB stores a field named __proto__; mingo refuses such a path. Either is acceptable here.
    await c.updateOne({ _id: 'a' }, { $set: { [`__proto__.${field}`]: 'yes' } }).catch(() => undefined);
    await c.updateOne({ _id: 'a' }, { $set: JSON.parse(`{"__proto__": {"${field}": "yes"}}`) as Doc }).catch(() => undefined);
    t.is(({} as Doc)[field], undefined);
    t.is(Object.getPrototypeOf((await c.findOne({ _id: 'a' }))!), Object.prototype);
    // Inherited properties are not fields: a path through one is a new document, as on MongoDB.
    await c.updateOne({ _id: 'a' }, { $set: { 'toString.x': 1, 'constructor.y': 2 }, $inc: { valueOf: 1 } });
    t.deepEqual(await c.findOne({ _id: 'a' }), { _id: 'a', v: 1, toString: { x: 1 }, constructor: { y: 2 }, valueOf: 1 } as Doc);
  });

  test(title('isolation: a concurrent reader never sees uncommitted writes'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('iso');
    await c.insertOne({ _id: 'seed' });
    const written = deferred();
    const readerDone = deferred<Doc | null>();
    const tx = store.withTransaction(async (session) => {
      await c.insertOne({ _id: 'x', v: 'uncommitted' }, { session });
      written.resolve();
      // Give the reader every chance to run while the write is uncommitted (correctness does
      // not depend on it: any outcome but seeing 'uncommitted' passes).
      await Promise.race([readerDone.promise, sleep(200)]);
      await c.updateOne({ _id: 'x' }, { $set: { v: 'committed' } }, { session });
    });
    await written.promise;
    const reader = c.findOne({ _id: 'x' }).then((d) => {
      readerDone.resolve(d);
      return d;
    });
    await tx;
    const seen = await reader;
    t.true(seen === null || seen.v === 'committed', `reader saw ${JSON.stringify(seen)}`);
    t.is((await c.findOne({ _id: 'x' }))!.v, 'committed');

    // And a rolled-back write is never seen either.
    const written2 = deferred();
    const readerDone2 = deferred<number>();
    const tx2 = store.withTransaction(async (session) => {
      await c.insertOne({ _id: 'y' }, { session });
      written2.resolve();
      await Promise.race([readerDone2.promise, sleep(200)]);
      throw new Error('abort');
    });
    await written2.promise;
    const count = c.countDocuments({ _id: 'y' }).then((n) => {
      readerDone2.resolve(n);
      return n;
    });
    await t.throwsAsync(tx2, { message: 'abort' });
    t.is(await count, 0);
  });

  test(title('concurrent transactions lose no update'), async (t) => {
    const store = await open(t);
    const c = store.db.collection<Doc>('counter');
    await c.insertOne({ _id: 'n', inc: 0, rmw: 0 });
    const n = 12;
    // Through runCommand, the service's one retry loop: on MongoDB a write conflict aborts a transaction
    // (TransientTransactionError) and the whole callback runs again.
    await Promise.all(
      Array.from({ length: n }, () =>
        runCommand(store, async (session: StoreSession) => {
          await c.updateOne({ _id: 'n' }, { $inc: { inc: 1 } }, { session });
          // Read-modify-write: only safe if the engine isolates transactions properly.
          const cur = await c.findOne({ _id: 'n' }, { session });
          await c.updateOne({ _id: 'n' }, { $set: { rmw: cur!.rmw + 1 } }, { session });
        })
      )
    );
    t.deepEqual(await c.findOne({ _id: 'n' }), { _id: 'n', inc: n, rmw: n });
  });

  test(title('Agenda runs a job through MongoBackend on store.db.raw'), async (t) => {
    const store = await open(t);
    const agenda = new Agenda({ backend: new MongoBackend({ mongo: store.db.raw }), processEvery: 100 });
    await agenda.ready;
    t.teardown(() => agenda.stop());
    let runs = 0;
    const ran = deferred<unknown>();
    agenda.define(
      'conformance.ping',
      async (job) => {
        runs++;
        ran.resolve(job.attrs.data);
      },
      // Agenda's liveness check sleeps lockLifetime / 2 (default 5 minutes) after the job
      // ends, which would hold the test process open that long.
      { lockLifetime: 1000 }
    );
    const completed = new Promise<void>((resolve) => agenda.once('complete:conformance.ping', () => resolve()));
    await agenda.start();
    await agenda.now('conformance.ping', { n: 1 });
    t.deepEqual(await ran.promise, { n: 1 });
    await completed;
    await agenda.stop();
    t.is(runs, 1);
    const jobs = await store.db.collection<Doc>('agendaJobs').find({ name: 'conformance.ping' }).toArray();
    t.is(jobs.length, 1);
    t.true(jobs[0].lastFinishedAt instanceof Date);
    t.falsy(jobs[0].lockedAt);
  });
}
