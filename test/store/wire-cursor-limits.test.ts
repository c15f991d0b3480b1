// The wire listener's cursors under a hostile reader: one user cannot kill or guess another's
// cursors, and the caps on open cursors and result sizes refuse work instead of letting the web
// process run out of memory. The caps are lowered here so that the tests stay small; the tests
// share one listener, so they run one at a time and close the cursors they open.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { Long, MongoClient, type Document, type MongoServerError } from 'mongodb';
import { Cursors, cursorLimits } from '../../src/store/wire/cursors.ts';
import { EmbeddedCollection } from '../../src/store/embedded/collection.ts';
import { startListener, type TestListener } from '../helpers/wire.ts';

const c = 'analytics_purchases';

Object.assign(cursorLimits, { perUser: 3, total: 5, resultDocuments: 50 });

let wire: TestListener;
test.before(async () => {
  wire = await startListener();
});
test.after.always(() => wire?.close());

const dbName = () => `c_${randomBytes(5).toString('hex')}`;

async function client(t: { teardown(fn: () => unknown): void }, url: string): Promise<MongoClient> {
  const c = await MongoClient.connect(url, { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => c.close());
  return c;
}

async function failure(work: Promise<unknown>): Promise<{ code: unknown; codeName: unknown }> {
  try {
    await work;
  } catch (error) {
    const e = error as MongoServerError;
    return { code: e.code, codeName: e.codeName };
  }
  throw new Error('expected the command to fail');
}

/** The service user's and the analyst's handles on a fresh database with n documents in c (a read model's name, so that the analyst may read it). */
async function seeded(t: { teardown(fn: () => unknown): void }, n: number) {
  const name = dbName();
  const service = (await client(t, wire.serviceUrl(name))).db();
  await service.collection<{ _id: number }>(c).insertMany(Array.from({ length: n }, (_, i) => ({ _id: i })));
  const analyst = (await client(t, wire.analystUrl(name))).db();
  return { service, analyst };
}

const asLong = (id: unknown) => Long.fromBigInt(BigInt(String(id)));

async function openCursor(db: ReturnType<MongoClient['db']>): Promise<Long> {
  const reply = await db.command({ find: c, batchSize: 1 });
  return asLong(reply.cursor.id);
}

test.serial("the analyst cannot kill the service user's cursor, nor read it", async (t) => {
  const { service, analyst } = await seeded(t, 10);
  const id = await openCursor(service);
  const guesses = [id, ...Array.from({ length: 50 }, (_, i) => Long.fromNumber(i + 1))];
  const reply = await analyst.command({ killCursors: c, cursors: guesses });
  t.deepEqual(reply.cursorsKilled, []);
  t.is(reply.cursorsNotFound.length, guesses.length);
  t.like(await failure(analyst.command({ getMore: id, collection: c, batchSize: 1 })), { code: 13, codeName: 'Unauthorized' });
  // Its own cursor, named on another collection, is not killed either.
  t.deepEqual((await service.command({ killCursors: 'other', cursors: [id] })).cursorsKilled, []);

  const more = await service.command({ getMore: id, collection: c, batchSize: 1 });
  t.deepEqual(more.cursor.nextBatch, [{ _id: 1 }]);
  const killed = await service.command({ killCursors: c, cursors: [id] });
  t.deepEqual(killed.cursorsKilled.map(String), [id.toString()]);
});

test.serial('cursor ids are random positive 64-bit numbers, not a sequence', async (t) => {
  const { service } = await seeded(t, 10);
  const ids = [await openCursor(service), await openCursor(service), await openCursor(service)];
  await service.command({ killCursors: c, cursors: ids });
  t.true(ids.every((id) => id.greaterThan(Long.fromNumber(2 ** 32))), ids.join(', '));
  t.false(ids[1].subtract(ids[0]).equals(1) && ids[2].subtract(ids[1]).equals(1));
});

test.serial("past the per-user cap a new cursor is refused; the user's open cursors and other users are unaffected", async (t) => {
  const { service, analyst } = await seeded(t, 10);
  const ids = [await openCursor(service), await openCursor(service), await openCursor(service)];
  t.like(await failure(service.command({ find: c, batchSize: 1 })), { code: 146, codeName: 'ExceededMemoryLimit' });
  t.like(await failure(service.command({ aggregate: c, pipeline: [], cursor: { batchSize: 1 } })), { code: 146 });
  // A result that fits in its first batch needs no cursor.
  t.is((await service.collection<{ _id: number }>(c).find().toArray()).length, 10);
  for (const [i, id] of ids.entries()) {
    t.deepEqual((await service.command({ getMore: id, collection: c, batchSize: 1 })).cursor.nextBatch, [{ _id: 1 }], `cursor ${i}`);
  }
  const theirs = await openCursor(analyst);
  t.deepEqual((await analyst.command({ getMore: theirs, collection: c })).cursor.nextBatch.length, 9);
  // Closing one makes room again.
  await service.command({ killCursors: c, cursors: [ids[0]] });
  const again = await openCursor(service);
  await service.command({ killCursors: c, cursors: [again, ids[1], ids[2]] });
});

test.serial('a result past the document cap is refused with ExceededMemoryLimit', async (t) => {
  const { service, analyst } = await seeded(t, 60);
  const refused = { code: 146, codeName: 'ExceededMemoryLimit' };
  t.like(await failure(service.collection<{ _id: number }>(c).find().toArray()), refused);
  t.like(await failure(analyst.collection<{ _id: number }>(c).find({}, { batchSize: 1 }).toArray()), refused);
  const unwound = (n: number) => [{ $limit: 1 }, { $project: { x: { $range: [0, n] } } }, { $unwind: '$x' }];
  t.like(await failure(analyst.collection<{ _id: number }>(c).aggregate(unwound(51), { batchSize: 1 }).toArray()), refused);
  t.is((await analyst.collection<{ _id: number }>(c).aggregate(unwound(50), { batchSize: 1 }).toArray()).length, 50);
  // The pipeline stops one document past the cap, instead of building them all only to refuse them.
  const seen: Document[][] = [];
  const aggregate = EmbeddedCollection.prototype.aggregate;
  t.teardown(() => void (EmbeddedCollection.prototype.aggregate = aggregate));
  EmbeddedCollection.prototype.aggregate = function (this: EmbeddedCollection, pipeline: Document[], ...rest: unknown[]) {
    seen.push(pipeline);
    return (aggregate as (...args: unknown[]) => ReturnType<typeof aggregate>).call(this, pipeline, ...rest);
  } as typeof aggregate;
  t.like(await failure(analyst.collection<{ _id: number }>(c).aggregate(unwound(500_000), { batchSize: 1 }).toArray()), refused);
  EmbeddedCollection.prototype.aggregate = aggregate;
  t.deepEqual(seen.at(-1)?.at(-1), { $limit: 51 });
  t.is((await analyst.collection<{ _id: number }>(c).find({}, { limit: 50, batchSize: 7 }).toArray()).length, 50);
  t.is((await analyst.collection<{ _id: number }>(c).find({ _id: { $gte: 10 } }).toArray()).length, 50);
});

test.serial('a huge batchSize does not make a batch larger than 8 MiB, for find, aggregate or getMore', async (t) => {
  const name = dbName();
  const service = (await client(t, wire.serviceUrl(name))).db();
  const mib = 'x'.repeat(1024 * 1024);
  await service.collection<{ _id: number; pad: string }>(c).insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i, pad: mib })));
  const analyst = (await client(t, wire.analystUrl(name))).db();
  const bytes = (docs: Document[]) => docs.reduce((sum, d) => sum + String(d.pad).length, 0);
  for (const first of [
    await analyst.command({ find: c, batchSize: 1_000_000_000 }),
    await analyst.command({ aggregate: c, pipeline: [], cursor: { batchSize: 1_000_000_000 } }),
  ]) {
    t.true(first.cursor.firstBatch.length < 20 && bytes(first.cursor.firstBatch) <= 8 * 1024 * 1024, `first batch: ${first.cursor.firstBatch.length} documents`);
    const next = await analyst.command({ getMore: first.cursor.id, collection: c, batchSize: 1_000_000_000 });
    t.true(bytes(next.cursor.nextBatch) <= 8 * 1024 * 1024, `next batch: ${next.cursor.nextBatch.length} documents`);
    await analyst.command({ killCursors: c, cursors: [first.cursor.id] });
  }
});

test.serial("a connection's cursors close with it; a user's cursors may hold only so many bytes", (t) => {
  const cursors = new Cursors({ perUser: 10, total: 10, resultDocuments: 100, bytesPerUser: 1000 });
  const docs: Document[] = Array.from({ length: 10 }, (_, i) => ({ _id: i, pad: 'x'.repeat(20) }));
  const onOne = cursors.open('d.c', 'analyst', docs, 1, false, 1).cursor.id;
  const onTwo = cursors.open('d.c', 'analyst', docs, 1, false, 2).cursor.id;
  cursors.closeConnection(1);
  t.throws(() => cursors.more(onOne.toBigInt(), 'd.c', 'analyst', 1, 2), { message: /not found/ });
  t.deepEqual(cursors.more(onTwo.toBigInt(), 'd.c', 'analyst', 1, 2).cursor.nextBatch, [docs[1]]);

  const big = Array.from({ length: 10 }, (_, i) => ({ _id: i, pad: 'x'.repeat(200) }));
  t.throws(() => cursors.open('d.c', 'analyst', big, 1, false, 2), { message: /bytes/ });
  t.not(cursors.open('d.c', 'service', big.slice(0, 4), 1, false, 3).cursor.id, Long.ZERO, 'another user has its own budget');
});

test.serial('a negative batchSize is refused (BadValue), as mongod refuses it, for find, aggregate and getMore', async (t) => {
  const { analyst } = await seeded(t, 3);
  t.like(await failure(analyst.command({ find: c, batchSize: -1 })), { code: 2, codeName: 'BadValue' });
  t.like(await failure(analyst.command({ aggregate: c, pipeline: [], cursor: { batchSize: -1 } })), { code: 2, codeName: 'BadValue' });
  const id = asLong((await analyst.command({ find: c, batchSize: 1 })).cursor.id);
  t.like(await failure(analyst.command({ getMore: id, collection: c, batchSize: -1 })), { code: 2, codeName: 'BadValue' });
  t.deepEqual((await analyst.command({ getMore: id, collection: c, batchSize: 5 })).cursor.nextBatch, [{ _id: 1 }, { _id: 2 }], 'the cursor is still there');
});
