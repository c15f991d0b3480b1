import test from 'ava';
import fc from 'fast-check';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Index, type IndexOptions } from '../../src/store/embedded/collection-data.ts';
import { quoteIdent, tableOf } from '../../src/store/embedded/table-names.ts';
import { DATABASE_FILE, SCHEMA_VERSION } from '../../src/store/embedded/database-file.ts';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { canonicalKey, decode, encode } from '../../src/store/embedded/values.ts';
import { registerStoreConformance } from './conformance.ts';
import { registerCommandConformance } from './command-conformance.ts';

registerStoreConformance(() => openEmbeddedStore({ ttlSweepIntervalMs: 25 }), { name: 'embedded :memory:' });
registerCommandConformance(() => openEmbeddedStore({ ttlSweepIntervalMs: 25 }), { name: 'embedded :memory:' });

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
registerCommandConformance(fileStore, { name: 'embedded file' });

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

test('embedded: dates keep their instant through the stored form, however often the same dates recur (the texts are cached)', (t) => {
  // Few distinct instants, so that most conversions are answered from the caches, past their bound too.
  const instant = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: -8.64e15, max: 8.64e15 }));
  fc.assert(
    fc.property(fc.array(instant, { maxLength: 40 }), fc.array(fc.integer({ min: -8.64e15, max: 8.64e15 }), { minLength: 1100, maxLength: 1100 }), (times, filler) => {
      encode({ filler: filler.map((ms) => new Date(ms)) });
      const doc = { _id: 'd', at: times.map((ms) => new Date(ms)), one: new Date(times[0] ?? 0) };
      const back = decode(encode(doc));
      assert.deepEqual(back, doc);
      const list = back.at as Date[];
      assert.equal(new Set(list).size, list.length, 'every date is an object of its own');
    }),
    { numRuns: 50 },
  );
  t.deepEqual(decode(encode({ bad: new Date(Number.NaN) })), { bad: null });
  t.is((decode('{"d": {"$date": "not a date"}}').d as Date).getTime(), Number.NaN);
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

test('embedded: a failed write that created a collection aborts its transaction: the collection is gone with the rest', async (t) => {
  const store = await fileStore();
  t.teardown(() => store.close());
  const c = store.db.collection<Doc>('fresh');
  const error = await t.throwsAsync(
    store.withTransaction(async (session) => {
      const failed = await t.throwsAsync(c.insertMany([{ _id: 'a' }, { _id: 'a' }], { session }));
      t.is((failed as { code?: number }).code, 11000);
      await c.insertOne({ _id: 'b' }, { session });
    }),
  );
  t.is((error as { code?: number }).code, 251);
  t.deepEqual(await c.find({}).toArray(), []);
  t.deepEqual(await store.db.listCollectionNames(), []);
  await c.insertOne({ _id: 'c' });
  t.deepEqual(await c.find({}).toArray(), [{ _id: 'c' }], 'the store is usable afterwards');
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

// --- index keys: the _sc_keys rows and each row's ks column ----------------------------------

/**
 * The index keys of every collection in the database file, three ways: the _sc_keys rows, the keys
 * the live documents have (recomputed from their stored text, so only for values that survive it),
 * and the keys the rows' ks columns list. Each as sorted JSON tuples [ix, k, r, u, t] ([ix, k, r] for ks).
 */
function indexKeys(db: DatabaseSync) {
  // One snapshot: the store's TTL sweep may commit between two of these reads otherwise.
  db.exec('BEGIN');
  try {
    return indexKeysNow(db);
  } finally {
    db.exec('COMMIT');
  }
}

function indexKeysNow(db: DatabaseSync) {
  const indexes = new Map<string, Index[]>();
  for (const { ix, coll, spec } of db.prepare('SELECT ix, coll, spec FROM _sc_indexes').all() as Array<{ ix: number; coll: string; spec: string }>) {
    const { key, ...options } = decode(spec) as unknown as { key: Record<string, unknown> } & IndexOptions;
    indexes.set(coll, [...(indexes.get(coll) ?? []), new Index(ix, key, options)]);
  }
  const expected: string[] = [];
  const listed: string[] = [];
  for (const [coll, list] of indexes) {
    for (const { r, doc, ks } of db.prepare(`SELECT r, doc, ks FROM ${quoteIdent(tableOf(coll))}`).all() as Array<{ r: number; doc: string; ks: string | null }>) {
      for (const index of list) for (const key of index.keysOf(decode(doc))) expected.push(JSON.stringify([index.ix, key.k, r, index.unique ? 1 : null, key.t]));
      for (const [ix, keys] of Object.entries(JSON.parse(ks ?? '{}') as Record<string, string[]>)) for (const k of keys) listed.push(JSON.stringify([Number(ix), k, r]));
    }
  }
  const rows = db.prepare('SELECT ix, k, r, u, t FROM _sc_keys').all() as Array<{ ix: number; k: string; r: number; u: number | null; t: number | null }>;
  return {
    stored: rows.map((x) => JSON.stringify([x.ix, x.k, x.r, x.u, x.t])).sort(),
    expected: expected.sort(),
    storedWithoutUT: rows.map((x) => JSON.stringify([x.ix, x.k, x.r])).sort(),
    listed: listed.sort(),
  };
}

function hasRowIndex(db: DatabaseSync): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE name = '_sc_keys_row'").get() !== undefined;
}

type Fields = { a?: unknown; b?: unknown; c?: number; flag?: boolean; at?: 'expired' | 'live' | 'text'; other?: number };

/** The document fields of generated ones: `at` as a date an hour past its TTL, one still alive, or not a date. */
function materialize(fields: Fields): Record<string, unknown> {
  const out: Record<string, unknown> = { ...fields };
  if (fields.at === 'expired') out.at = new Date(Date.now() - 7_200_000);
  else if (fields.at === 'live') out.at = new Date(Date.now() + 600_000);
  else if (fields.at === 'text') out.at = 'soon';
  return out;
}

const idArb = fc.integer({ min: 0, max: 5 });
const aArb = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom('x', 'y', null), fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }));
const fieldsArb: fc.Arbitrary<Fields> = fc.record(
  { a: aArb, b: fc.constantFrom('x', 'y', null), c: fc.integer({ min: 0, max: 2 }), flag: fc.boolean(), at: fc.constantFrom('expired' as const, 'live' as const, 'text' as const), other: fc.integer({ min: 0, max: 9 }) },
  { requiredKeys: [] }
);
const commandArb = fc.oneof(
  fc.record({ op: fc.constant('insert' as const), id: idArb, fields: fieldsArb }),
  fc.record({ op: fc.constant('set' as const), id: idArb, fields: fieldsArb }),
  fc.record({ op: fc.constant('unset' as const), id: idArb, field: fc.constantFrom('a', 'b', 'c', 'flag', 'at', 'other') }),
  fc.record({ op: fc.constant('replace' as const), id: idArb, fields: fieldsArb }),
  fc.record({ op: fc.constant('setMany' as const), b: fc.constantFrom('x', 'y'), a: aArb }),
  fc.record({ op: fc.constant('delete' as const), id: idArb }),
  fc.record({ op: fc.constant('deleteMany' as const), b: fc.constantFrom('x', 'y') }),
  fc.record({ op: fc.constant('aborted' as const), id: idArb, fields: fieldsArb }),
  fc.record({ op: fc.constant('expire' as const) }),
  fc.record({ op: fc.constant('createIndex' as const), which: fc.constantFrom(0, 1) })
);
type Command = typeof commandArb extends fc.Arbitrary<infer T> ? T : never;

test('embedded: after any inserts, updates, deletes, TTL expiries and new indexes, _sc_keys holds exactly the live documents\' keys, as their ks columns list them', async (t) => {
  const store = await fileStore();
  const raw = new DatabaseSync(store.location, { readOnly: true });
  t.teardown(async () => {
    raw.close();
    await store.close();
  });
  const run = async (c: ReturnType<typeof store.db.collection<Record<string, unknown> & { _id: number }>>, command: Command) => {
    const { op } = command;
    if (op === 'insert') await c.insertOne({ _id: command.id, ...materialize(command.fields) });
    else if (op === 'set') await c.updateOne({ _id: command.id }, { $set: { other: 0, ...materialize(command.fields) } });
    else if (op === 'unset') await c.updateOne({ _id: command.id }, { $unset: { [command.field]: '' } });
    else if (op === 'replace') await c.replaceOne({ _id: command.id }, materialize(command.fields));
    else if (op === 'setMany') await c.updateMany({ b: command.b }, { $set: { a: command.a } });
    else if (op === 'delete') await c.deleteOne({ _id: command.id });
    else if (op === 'deleteMany') await c.deleteMany({ b: command.b });
    else if (op === 'expire') await store.sweepExpired();
    else if (op === 'createIndex') {
      if (command.which === 0) await c.createIndex({ b: 1, at: 1 }, { sparse: true });
      else await c.createIndex({ 'a.0': 1, other: 1 });
    } else {
      await store
        .withTransaction(async (session) => {
          await c.updateOne({ _id: command.id }, { $set: materialize(command.fields) }, { session });
          throw new Error('aborted');
        })
        .catch((error: Error & { code?: unknown }) => {
          // A duplicate key in the update: reported as for any other write, below.
          if (error.code === 11000) throw error;
          assert.equal(error.message, 'aborted');
        });
    }
  };
  await t.notThrowsAsync(
    fc.assert(
      fc.asyncProperty(fc.array(commandArb, { maxLength: 30 }), async (commands) => {
        // The previous run's collection goes, and its keys with it.
        await store.db.raw.dropCollection('p');
        const c = store.db.collection<Record<string, unknown> & { _id: number }>('p');
        await c.createIndex({ a: 1 });
        await c.createIndex({ b: 1, a: -1 });
        await c.createIndex({ c: 1 }, { unique: true, partialFilterExpression: { flag: true } });
        await c.createIndex({ at: 1 }, { expireAfterSeconds: 3600 });
        for (const command of commands) {
          try {
            await run(c, command);
          } catch (error) {
            // A duplicate _id or unique key: the write left nothing behind.
            if ((error as { code?: unknown }).code !== 11000) throw error;
          }
          const keys = indexKeys(raw);
          assert.deepStrictEqual(keys.stored, keys.expected, `after ${JSON.stringify(command)}`);
          assert.deepStrictEqual(keys.listed, keys.storedWithoutUT, `ks after ${JSON.stringify(command)}`);
        }
      }),
      {
        numRuns: 150,
        // Found by a CI run: the aborted transaction's update meets a unique key, as any other write may.
        examples: [[[{ op: 'insert', id: 0, fields: {} }, { op: 'insert', id: 1, fields: { c: 2, flag: true } }, { op: 'aborted', id: 0, fields: { c: 2, flag: true } }]]],
      }
    )
  );
});

test('embedded: a document\'s keys are deleted as they were written, even keys of values its stored text does not keep', async (t) => {
  const store = await fileStore();
  const raw = new DatabaseSync(store.location, { readOnly: true });
  t.teardown(async () => {
    raw.close();
    await store.close();
  });
  const c = store.db.collection<{ _id: string; a: unknown }>('roundtrip');
  await c.createIndex({ a: 1 });
  // Indexed as 'dNaN' and '{}' (a URL has no enumerable fields), stored as null and as the URL's text.
  await c.insertMany([
    { _id: 'date', a: new Date(NaN) },
    { _id: 'url', a: new URL('https://x.test/') },
    { _id: 'gone', a: new Date(NaN) },
  ]);
  const keys = () => (raw.prepare('SELECT k FROM _sc_keys ORDER BY k').all() as Array<{ k: string }>).map((row) => row.k);
  t.deepEqual(keys(), ['2:{}', '4:dNaN', '4:dNaN']);
  t.is((await c.findOne({ _id: 'date' }))!.a, null);
  await c.updateOne({ _id: 'date' }, { $set: { a: 1 } });
  await c.replaceOne({ _id: 'url' }, { a: 2 });
  await c.deleteOne({ _id: 'gone' });
  t.deepEqual(keys(), ['2:n1', '2:n2']);
});

// --- schema version 1 (index keys found by the _sc_keys_row index) ---------------------------

/** Schema version 1 as its database-file.ts created it; its collection tables were (r, id, doc). */
const VERSION_1_SCHEMA = `
PRAGMA journal_mode = WAL;
CREATE TABLE _sc_meta (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE _sc_indexes (ix INTEGER PRIMARY KEY, coll TEXT NOT NULL, name TEXT NOT NULL, spec TEXT NOT NULL, UNIQUE (coll, name));
CREATE TABLE _sc_keys (ix INTEGER NOT NULL, k TEXT NOT NULL, r INTEGER NOT NULL, u INTEGER, t INTEGER, PRIMARY KEY (ix, k, r)) WITHOUT ROWID;
CREATE INDEX _sc_keys_row ON _sc_keys (ix, r);
CREATE UNIQUE INDEX _sc_keys_unique ON _sc_keys (ix, k) WHERE u = 1;
CREATE INDEX _sc_keys_ttl ON _sc_keys (ix, t) WHERE t IS NOT NULL;
PRAGMA user_version = 1;
`;

type Version1Collections = Record<string, { indexes: Array<[Record<string, unknown>, IndexOptions?]>; docs: Array<Record<string, unknown>> }>;

/** A version-1 database file in dir, written as version 1 wrote documents, index definitions and keys. */
function writeVersion1(dir: string, collections: Version1Collections): string {
  const file = join(dir, DATABASE_FILE);
  const db = new DatabaseSync(file);
  db.exec(VERSION_1_SCHEMA);
  for (const [name, { indexes, docs }] of Object.entries(collections)) {
    db.exec(`CREATE TABLE ${quoteIdent(name)} (r INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL)`);
    const created = indexes.map(([key, options = {}]) => {
      const spec = new Index(0, key, options).spec();
      const { lastInsertRowid } = db.prepare('INSERT INTO _sc_indexes (coll, name, spec) VALUES (?, ?, ?)').run(name, spec.name as string, JSON.stringify(spec));
      return new Index(Number(lastInsertRowid), key, options);
    });
    for (const doc of docs) {
      const { lastInsertRowid: r } = db.prepare(`INSERT INTO ${quoteIdent(name)} (id, doc) VALUES (?, ?)`).run(canonicalKey(doc._id), encode(doc));
      for (const index of created) {
        for (const key of index.keysOf(doc)) db.prepare('INSERT INTO _sc_keys (ix, k, r, u, t) VALUES (?, ?, ?, ?, ?)').run(index.ix, key.k, r, index.unique ? 1 : null, key.t);
      }
    }
  }
  db.exec("INSERT INTO _sc_meta (k, v) VALUES ('catalog', 1)");
  db.close();
  return file;
}

function columns(db: DatabaseSync, table: string): string[] {
  return (db.prepare('SELECT name FROM pragma_table_info(?)').all(table) as Array<{ name: string }>).map((c) => c.name);
}

test('embedded: a version-1 database is migrated at open (ks filled from _sc_keys, _sc_keys_row dropped); documents, lookups, unique indexes and TTL work on', async (t) => {
  const { MongoServerError } = await import('mongodb');
  const dir = mkdtempSync(join(tmpdir(), 'store-v1-'));
  const now = Date.now();
  const oldSession = { _id: 's-old', orgId: 'o1', expiresAt: new Date(now - 60_000) };
  const newSession = { _id: 's-new', orgId: 'o1', expiresAt: new Date(now + 3_600_000) };
  writeVersion1(dir, {
    organizations: { indexes: [[{ handle: 1 }, { unique: true }]], docs: [{ _id: 'o1', handle: 'acme' }, { _id: 'o2', handle: 'beta' }] },
    sessions: { indexes: [[{ expiresAt: 1 }, { expireAfterSeconds: 0 }], [{ orgId: 1 }]], docs: [oldSession, newSession] },
    'tag "list"': {
      indexes: [[{ labels: 1 }], [{ code: 1 }, { unique: true, partialFilterExpression: { live: true } }]],
      docs: [{ _id: 1, labels: ['red', 'blue'], code: 'c', live: true }, { _id: 2, labels: [], code: 'c', live: false }, { _id: 3 }],
    },
    plain: { indexes: [], docs: [{ _id: 'p', n: 1 }] },
  });
  let store = await openEmbeddedStore({ dataDir: dir, ttlSweepIntervalMs: 3_600_000 });
  const raw = new DatabaseSync(store.location, { readOnly: true });
  t.teardown(async () => {
    raw.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  t.is((raw.prepare('PRAGMA user_version').get() as { user_version: number }).user_version, SCHEMA_VERSION);
  t.false(hasRowIndex(raw));
  for (const table of ['organizations', 'sessions', 'tag "list"', 'plain']) t.deepEqual(columns(raw, table), ['r', 'id', 'doc', 'ks']);
  const migrated = indexKeys(raw);
  t.is(migrated.stored.length, 2 + 4 + 5);
  t.deepEqual(migrated.stored, migrated.expected);
  t.deepEqual(migrated.listed, migrated.storedWithoutUT);
  t.is((raw.prepare('SELECT ks FROM plain').get() as { ks: string | null }).ks, null);

  const organizations = store.db.collection<{ _id: string; handle: string }>('organizations');
  const sessions = store.db.collection<{ _id: string; orgId: string; expiresAt: Date }>('sessions');
  const tags = store.db.collection<{ _id: number; labels?: string[]; code?: string; live?: boolean }>('tag "list"');
  t.deepEqual(await organizations.find({}).toArray(), [{ _id: 'o1', handle: 'acme' }, { _id: 'o2', handle: 'beta' }]);
  t.deepEqual(await store.db.collection('plain').findOne({}), { _id: 'p', n: 1 });
  t.deepEqual(await organizations.findOne({ handle: 'beta' }), { _id: 'o2', handle: 'beta' });
  t.deepEqual((await tags.find({ labels: 'blue' }).toArray()).map((d) => d._id), [1]);
  t.deepEqual(await sessions.find({ orgId: 'o1' }).toArray(), [oldSession, newSession]);

  const duplicate = await t.throwsAsync(organizations.insertOne({ _id: 'o3', handle: 'acme' }));
  t.true(duplicate instanceof MongoServerError);
  t.is((duplicate as { code?: number }).code, 11000);
  await t.throwsAsync(tags.insertOne({ _id: 4, code: 'c', live: true }), { code: 11000 });
  await tags.insertOne({ _id: 4, code: 'c', live: false });

  t.is(await store.sweepExpired(), 1);
  t.deepEqual(await sessions.find({}).toArray(), [newSession]);
  // Keys written by version 1 are moved and deleted exactly.
  await organizations.updateOne({ _id: 'o1' }, { $set: { handle: 'gamma' } });
  await organizations.insertOne({ _id: 'o3', handle: 'acme' });
  await tags.deleteOne({ _id: 1 });
  await tags.insertOne({ _id: 5, code: 'c', live: true });
  t.deepEqual(await tags.find({ labels: 'red' }).toArray(), []);
  const after = indexKeys(raw);
  t.deepEqual(after.stored, after.expected);
  t.deepEqual(after.listed, after.storedWithoutUT);

  // Opened again, a file of the current version is used as it is.
  await store.close();
  store = await openEmbeddedStore({ dataDir: dir, ttlSweepIntervalMs: 3_600_000 });
  t.deepEqual((await store.db.collection('organizations').find({ handle: 'acme' }).toArray()).map((d) => d._id), ['o3']);
  t.deepEqual(indexKeys(raw).stored, after.stored);
});

test('embedded: a version-1 database whose migration fails is refused and left as it was', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'store-v1-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = writeVersion1(dir, {
    first: { indexes: [[{ a: 1 }]], docs: [{ _id: 1, a: 1 }] },
    last: { indexes: [], docs: [] },
  });
  // A column the migration cannot add makes it fail after it changed the first table.
  const edit = new DatabaseSync(file);
  edit.exec('ALTER TABLE last ADD COLUMN ks TEXT');
  edit.close();
  await t.throwsAsync(openEmbeddedStore({ dataDir: dir }), { message: /cannot be opened as this service's database: duplicate column name: ks/ });
  const db = new DatabaseSync(file, { readOnly: true });
  t.teardown(() => db.close());
  t.is((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version, 1);
  t.true(hasRowIndex(db));
  t.deepEqual(columns(db, 'first'), ['r', 'id', 'doc']);
});

test('embedded: a new database file is at the current schema version, without _sc_keys_row, its keys listed in ks', async (t) => {
  const store = await fileStore();
  const raw = new DatabaseSync(store.location, { readOnly: true });
  t.teardown(async () => {
    raw.close();
    await store.close();
  });
  const c = store.db.collection<{ _id: string; a?: number }>('x');
  await c.createIndex({ a: 1 });
  await c.insertMany([{ _id: 'one', a: 1 }, { _id: 'none' }]);
  await c.createIndex({ a: -1 }, { sparse: true });
  t.is((raw.prepare('PRAGMA user_version').get() as { user_version: number }).user_version, SCHEMA_VERSION);
  t.false(hasRowIndex(raw));
  const ix = (raw.prepare('SELECT ix FROM _sc_indexes ORDER BY ix').all() as Array<{ ix: number }>).map((row) => row.ix);
  const ks = (raw.prepare('SELECT ks FROM x ORDER BY r').all() as Array<{ ks: string }>).map((row) => JSON.parse(row.ks));
  t.deepEqual(ks, [{ [ix[0]]: ['2:n1'], [ix[1]]: ['2:n1'] }, { [ix[0]]: ['1:z'] }]);
});

test('embedded: a version-2 database, whose tables had the collections\' names, opens with its capitalised collections renamed and intact', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'schema-2-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const first = await openEmbeddedStore({ dataDir: dir });
  await first.db.collection<{ _id: string; n: number }>('Ledger').createIndex({ n: 1 }, { unique: true });
  await first.db.collection<{ _id: string; n: number }>('Ledger').insertMany([{ _id: 'a', n: 1 }, { _id: 'b', n: 2 }]);
  await first.db.collection<{ _id: string }>('plain').insertOne({ _id: 'p' });
  await first.close();
  // As version 2 left it: the table named as the collection is, user_version 2.
  const raw = new DatabaseSync(join(dir, DATABASE_FILE));
  raw.exec('ALTER TABLE "$ledger" RENAME TO "Ledger"; PRAGMA user_version = 2;');
  raw.close();

  const store = await openEmbeddedStore({ dataDir: dir });
  t.teardown(() => store.close());
  t.deepEqual((await store.db.listCollectionNames()).sort(), ['Ledger', 'plain']);
  const ledger = store.db.collection<{ _id: string; n: number }>('Ledger');
  t.deepEqual(await ledger.find({ n: 2 }).toArray(), [{ _id: 'b', n: 2 }]);
  await t.throwsAsync(ledger.insertOne({ _id: 'c', n: 1 }), { code: 11000 });
  t.is(await store.db.collection('ledger').countDocuments({}), 0);
  const check = new DatabaseSync(join(dir, DATABASE_FILE), { readOnly: true });
  t.teardown(() => check.close());
  t.is((check.prepare('PRAGMA user_version').get() as { user_version: number }).user_version, SCHEMA_VERSION);
});

test('embedded: collections whose names look like the internal prefixes are listed by every connection on the file', async (t) => {
  const store = await fileStore();
  t.teardown(() => store.close());
  for (const name of ['escrow', 'sqliteXlog']) await store.db.collection<{ _id: string }>(name).insertOne({ _id: name });
  // A second store on the same file reads the catalog from SQLite, as another process does.
  const other = await openEmbeddedStore({ dataDir: dirname(store.location) });
  t.teardown(() => other.close());
  t.deepEqual((await other.db.listCollectionNames()).sort(), ['escrow', 'sqliteXlog']);
  t.deepEqual(await other.db.collection<{ _id: string }>('escrow').findOne({}), { _id: 'escrow' });
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

test('embedded: an index created after a drop, under the dropped one’s number, keeps every key it should', async (t) => {
  const store = await fileStore();
  t.teardown(() => store.close());
  const c = store.db.collection<{ _id: string; a?: number; b?: number }>('reuse');
  await c.createIndex({ a: 1 });
  await c.insertMany([{ _id: 'x', a: 1 }, { _id: 'y' }]);
  await c.dropIndex('a_1');
  // The next index takes the dropped one's number; x has no key in it (sparse), then gets the key
  // its old a: 1 had in the dropped index.
  await c.createIndex({ b: 1 }, { unique: true, sparse: true });
  await c.updateOne({ _id: 'x' }, { $set: { b: 1 } });
  await t.throwsAsync(c.insertOne({ _id: 'z', b: 1 }), { code: 11000 });
  await c.deleteOne({ _id: 'x' });
  await c.insertOne({ _id: 'z', b: 1 });
  t.deepEqual(await c.find({ b: 1 }).toArray(), [{ _id: 'z', b: 1 }]);
});

test('embedded: a partial filter’s dates and ObjectIds survive the catalog’s reload, so another connection enforces the unique index as the first', async (t) => {
  const { ObjectId } = await import('mongodb');
  const store = await fileStore();
  t.teardown(() => store.close());
  const since = new Date('2026-01-01T00:00:00Z');
  const owner = new ObjectId('64b7f0c2a1b2c3d4e5f60718');
  const c = store.db.collection<{ _id: string; k: string; at: Date; owner?: unknown }>('partial_dates');
  await c.createIndex({ k: 1 }, { unique: true, partialFilterExpression: { at: { $gte: since }, owner: { $eq: owner } } });
  await c.insertOne({ _id: 'a', k: 'x', at: new Date('2026-02-01T00:00:00Z'), owner });
  await t.throwsAsync(c.insertOne({ _id: 'b', k: 'x', at: new Date('2026-03-01T00:00:00Z'), owner }), { code: 11000 });
  // A second store on the file reads the index from _sc_indexes, as another process, or this one restarted, does.
  const other = await openEmbeddedStore({ dataDir: dirname(store.location) });
  t.teardown(() => other.close());
  const d = other.db.collection<{ _id: string; k: string; at: Date; owner?: unknown }>('partial_dates');
  t.deepEqual((await d.indexes())[1].partialFilterExpression, { at: { $gte: since }, owner: { $eq: owner } });
  await t.throwsAsync(d.insertOne({ _id: 'c', k: 'x', at: new Date('2026-03-01T00:00:00Z'), owner }), { code: 11000 });
  await d.insertOne({ _id: 'd', k: 'x', at: new Date('2025-12-31T00:00:00Z'), owner });
  t.deepEqual((await d.find({}).toArray()).map((doc) => doc._id), ['a', 'd']);
});

// --- partial indexes in the planner ------------------------------------------------------------

test('embedded: a partial index serves only the queries that ask for its filter expression, as MongoDB uses one', (t) => {
  const partial = new Index(1, { agentId: 1, requestedAt: -1 }, { partialFilterExpression: { origin: 'DASHBOARD' } });
  t.true(partial.servesFilter({ agentId: 'a', origin: 'DASHBOARD' }));
  t.true(partial.servesFilter({ agentId: 'a', origin: { $eq: 'DASHBOARD' }, requestedAt: { $lt: new Date() } }));
  t.false(partial.servesFilter({ agentId: 'a' }), 'documents outside the expression would be missed');
  t.false(partial.servesFilter({ agentId: 'a', origin: 'API' }));
  t.false(partial.servesFilter({ agentId: 'a', origin: { $in: ['DASHBOARD', 'API'] } }));
  t.false(new Index(2, { a: 1 }, { sparse: true }).servesFilter({ a: 1 }));
  t.true(new Index(3, { a: 1 }, {}).servesFilter({ b: 1 }), 'a complete index, as before');
});

type Loose = Record<string, unknown>;

test('embedded: finds through a partial index answer what a scan of every document answers', async (t) => {
  const kinds = ['DASHBOARD', 'API', undefined] as const;
  const doc = fc.record({ g: fc.constantFrom('a', 'b', 'c'), n: fc.integer({ min: 0, max: 20 }), origin: fc.constantFrom(...kinds) });
  const query = fc.record({ g: fc.constantFrom('a', 'b', 'c'), origin: fc.constantFrom<unknown>('DASHBOARD', 'API', { $eq: 'DASHBOARD' }, undefined), below: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }) });
  await fc.assert(
    fc.asyncProperty(fc.array(doc, { maxLength: 30 }), fc.array(query, { minLength: 1, maxLength: 5 }), async (docs, queries) => {
      const store = await openEmbeddedStore();
      try {
        const c = store.db.collection<Loose>('p');
        await c.createIndex({ g: 1, n: -1 }, { partialFilterExpression: { origin: 'DASHBOARD' } });
        const stored = docs.map((d, i) => Object.fromEntries(Object.entries({ _id: i, ...d }).filter(([, v]) => v !== undefined)) as Loose);
        if (stored.length > 0) await c.insertMany(stored);
        for (const q of queries) {
          const filter: Loose = { g: q.g };
          if (q.origin !== undefined) filter.origin = q.origin;
          if (q.below !== undefined) filter.n = { $lt: q.below };
          const wantedOrigin = typeof q.origin === 'object' ? 'DASHBOARD' : q.origin;
          const expected = stored
            .filter((d) => d.g === q.g && (q.origin === undefined || d.origin === wantedOrigin) && (q.below === undefined || Number(d.n) < q.below))
            .sort((x, y) => Number(y.n) - Number(x.n) || Number(y._id) - Number(x._id));
          const found = await c.find(filter).sort({ n: -1, _id: -1 }).toArray();
          assert.deepEqual(found, expected, JSON.stringify(filter));
        }
      } finally {
        await store.close();
      }
    }),
    { numRuns: 60 },
  );
  t.pass();
});
