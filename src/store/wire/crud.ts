// The data commands, each a translation to the store contract (src/store/store.ts): find,
// getMore, killCursors, insert, update, delete, findAndModify, aggregate, count, distinct.
import { Long, type Document } from 'bson';
import type { StoreCollection, StoreSession } from '../store.ts';
import type { Call } from './call.ts';
import { cursorId } from './cursors.ts';
import { CommandError, writeError } from './errors.ts';
import { analystRead } from './analyst-read.ts';
import { writesAnywhere } from '../pipelines.ts';

function collectionName(call: Call): string {
  const name = call.command[call.name];
  if (typeof name !== 'string' || name === '') throw new CommandError('BadValue', `${call.name} needs a collection name`);
  return name;
}

function doc(value: unknown, what: string): Document {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new CommandError('TypeMismatch', `${what} must be an object`);
  return value as Document;
}

function count(value: unknown, what: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new CommandError('TypeMismatch', `${what} must be a whole number`);
  return value;
}

/** A batch size: a whole number, not negative (mongod's BadValue); 0 means as many as the first batch may hold. */
function batchSizeOf(value: unknown, what: string): number | undefined {
  const n = count(value, what);
  if (n !== undefined && n < 0) throw new CommandError('BadValue', `${what} must not be negative`);
  return n;
}

async function collection(call: Call, create: boolean): Promise<StoreCollection | undefined> {
  const store = await call.store(create);
  return store?.db.collection(collectionName(call));
}

function sessionOption(session: StoreSession | undefined): { session?: StoreSession } {
  return session ? { session } : {};
}

/** Runs fn atomically: in the command's transaction, or in one of its own. */
async function atomically<T>(call: Call, fn: (session: StoreSession) => Promise<T>): Promise<T> {
  if (call.session) return fn(call.session);
  const store = await call.store(true);
  return store!.withTransaction(fn);
}

export async function find(call: Call): Promise<Document> {
  const { command } = call;
  const name = collectionName(call);
  const ns = `${call.db}.${name}`;
  const limit = count(command.limit, 'limit');
  // One past the cap is enough to refuse the result, without projecting the rest of it.
  const most = Math.min(limit === undefined || limit === 0 ? Infinity : Math.abs(limit), call.server.cursors.limits.resultDocuments + 1);
  const filter = doc(command.filter, 'filter');
  const skip = count(command.skip, 'skip');
  const batchSize = batchSizeOf(command.batchSize, 'batchSize');
  const docs = await analystRead(
    call,
    { op: 'find', collection: name, args: { filter, sort: command.sort, projection: command.projection, skip, limit: most === Infinity ? undefined : most } },
    async () => {
      const coll = await collection(call, false);
      return coll ? coll.find(filter, { sort: command.sort, projection: command.projection, skip, limit: most, ...sessionOption(call.session) }).toArray() : [];
    },
    (result) => result.docs ?? [],
  );
  const single = command.singleBatch === true || (limit !== undefined && limit < 0);
  return call.server.cursors.open(ns, call.owner, docs, batchSize, single, call.conn.id);
}

export async function getMore(call: Call): Promise<Document> {
  const id = cursorId(call.command.getMore);
  if (id === undefined) throw new CommandError('TypeMismatch', 'getMore needs a cursor id, a whole number');
  const ns = `${call.db}.${String(call.command.collection)}`;
  return call.server.cursors.more(id, ns, call.owner, batchSizeOf(call.command.batchSize, 'batchSize'), call.conn.id);
}

export async function killCursors(call: Call): Promise<Document> {
  const ids = (Array.isArray(call.command.cursors) ? call.command.cursors : []).map((value) => {
    const id = cursorId(value);
    if (id === undefined) throw new CommandError('TypeMismatch', 'killCursors needs cursors, an array of cursor ids');
    return id;
  });
  const { killed, notFound } = call.server.cursors.kill(ids, `${call.db}.${collectionName(call)}`, call.owner);
  const longs = (list: bigint[]) => list.map((id) => Long.fromBigInt(id));
  return { cursorsKilled: longs(killed), cursorsNotFound: longs(notFound), cursorsAlive: [], cursorsUnknown: [], ok: 1 };
}

function list(value: unknown, what: string): Document[] {
  if (!Array.isArray(value)) throw new CommandError('TypeMismatch', `${what} must be an array`);
  return value.map((v, i) => doc(v, `${what}.${i}`));
}

async function eachWrite(call: Call, items: Document[], run: (item: Document, index: number) => Promise<void>): Promise<Document[]> {
  const ordered = call.command.ordered !== false;
  const errors: Document[] = [];
  for (const [index, item] of items.entries()) {
    try {
      await run(item, index);
    } catch (error) {
      errors.push(writeError(index, error));
      if (ordered || call.session) break;
    }
  }
  return errors;
}

function writeReply(fields: Document, errors: Document[]): Document {
  return errors.length ? { ...fields, writeErrors: errors, ok: 1 } : { ...fields, ok: 1 };
}

export async function insert(call: Call): Promise<Document> {
  const coll = (await collection(call, true))!;
  let n = 0;
  const errors = await eachWrite(call, list(call.command.documents, 'documents'), async (d) => {
    // mongod stores _id first whatever the order it was sent in (drivers append a generated one).
    const { _id, ...rest } = d;
    await coll.insertOne(_id === undefined ? d : { _id, ...rest }, sessionOption(call.session));
    n++;
  });
  return writeReply({ n }, errors);
}

function isReplacement(update: unknown): update is Document {
  return !Array.isArray(update) && !Object.keys(doc(update, 'u')).some((k) => k.startsWith('$'));
}

export async function update(call: Call): Promise<Document> {
  const coll = (await collection(call, true))!;
  let n = 0;
  let nModified = 0;
  const upserted: Document[] = [];
  const errors = await eachWrite(call, list(call.command.updates, 'updates'), async (u, index) => {
    const filter = doc(u.q, 'q');
    const options = { upsert: u.upsert === true, ...(u.arrayFilters ? { arrayFilters: u.arrayFilters } : {}), ...(u.sort ? { sort: u.sort } : {}), ...sessionOption(call.session) };
    let result;
    if (isReplacement(u.u)) {
      if (u.multi === true) throw new CommandError('FailedToParse', 'multi update is not supported for replacement-style update');
      result = await coll.replaceOne(filter, u.u, options);
    } else if (u.multi === true) {
      result = await coll.updateMany(filter, u.u as Document, options);
    } else {
      result = await coll.updateOne(filter, u.u as Document, options);
    }
    n += result.matchedCount + result.upsertedCount;
    nModified += result.modifiedCount;
    if (result.upsertedCount > 0) upserted.push({ index, _id: result.upsertedId });
  });
  return writeReply(upserted.length ? { n, nModified, upserted } : { n, nModified }, errors);
}

export async function remove(call: Call): Promise<Document> {
  const coll = (await collection(call, true))!;
  let n = 0;
  const errors = await eachWrite(call, list(call.command.deletes, 'deletes'), async (d) => {
    const filter = doc(d.q, 'q');
    const result = d.limit === 1 ? await coll.deleteOne(filter, sessionOption(call.session)) : await coll.deleteMany(filter, sessionOption(call.session));
    n += result.deletedCount;
  });
  return writeReply({ n }, errors);
}

export async function findAndModify(call: Call): Promise<Document> {
  const { command } = call;
  const coll = (await collection(call, true))!;
  const query = doc(command.query, 'query');
  const sort = command.sort;
  const projection = command.fields;
  const returnNew = command.new === true;
  if (command.remove === true) {
    return atomically(call, async (session) => {
      const hit = await coll.findOne(query, { sort, projection: { _id: 1 }, session });
      if (!hit) return { lastErrorObject: { n: 0 }, value: null, ok: 1 };
      const value = await coll.findOne({ _id: hit._id }, { projection, session });
      await coll.deleteOne({ _id: hit._id }, { session });
      return { lastErrorObject: { n: 1 }, value, ok: 1 };
    });
  }
  if (command.update === undefined) throw new CommandError('FailedToParse', 'Either an update or remove=true must be specified');
  if (isReplacement(command.update)) {
    const replacement = command.update;
    return atomically(call, async (session) => {
      const hit = await coll.findOne(query, { sort, projection: { _id: 1 }, session });
      if (hit) {
        const before = returnNew ? null : await coll.findOne({ _id: hit._id }, { projection, session });
        await coll.replaceOne({ _id: hit._id }, replacement, { session });
        const value = returnNew ? await coll.findOne({ _id: hit._id }, { projection, session }) : before;
        return { lastErrorObject: { n: 1, updatedExisting: true }, value, ok: 1 };
      }
      if (command.upsert !== true) return { lastErrorObject: { n: 0, updatedExisting: false }, value: null, ok: 1 };
      const result = await coll.replaceOne(query, replacement, { upsert: true, session });
      const value = returnNew ? await coll.findOne({ _id: result.upsertedId } as Document, { projection, session }) : null;
      return { lastErrorObject: { n: 1, updatedExisting: false, upserted: result.upsertedId }, value, ok: 1 };
    });
  }
  const result = (await coll.findOneAndUpdate(query, command.update as Document, {
    sort,
    projection,
    upsert: command.upsert === true,
    returnDocument: returnNew ? 'after' : 'before',
    includeResultMetadata: true,
    ...(command.arrayFilters ? { arrayFilters: command.arrayFilters } : {}),
    ...sessionOption(call.session),
  })) as unknown as Document;
  return { lastErrorObject: result.lastErrorObject, value: result.value ?? null, ok: 1 };
}

export async function aggregate(call: Call): Promise<Document> {
  const { command } = call;
  if (typeof command.aggregate !== 'string') {
    throw new CommandError('CommandNotFound', 'aggregate without a collection ({aggregate: 1}) is not supported by this listener');
  }
  if (command.explain === true) throw new CommandError('CommandNotFound', 'explain is not supported by this listener');
  const pipeline = list(command.pipeline, 'pipeline');
  const cursor = doc(command.cursor, 'cursor');
  const batchSize = batchSizeOf(cursor.batchSize, 'cursor.batchSize');
  const writes = writesAnywhere(pipeline);
  // Stops a streaming pipeline one document past the cap ($unwind of a huge $range, say) before it is all
  // built in memory only to be refused; a $out or $merge stage must stay last.
  const bounded = writes ? pipeline : [...pipeline, { $limit: call.server.cursors.limits.resultDocuments + 1 }];
  const docs = await analystRead(
    call,
    { op: 'aggregate', collection: command.aggregate, args: { pipeline: bounded } },
    async () => {
      const coll = await collection(call, writes);
      return coll ? coll.aggregate(bounded, sessionOption(call.session)).toArray() : [];
    },
    (result) => result.docs ?? [],
  );
  return call.server.cursors.open(`${call.db}.${command.aggregate}`, call.owner, docs, batchSize, false, call.conn.id);
}

export async function countCommand(call: Call): Promise<Document> {
  const skip = count(call.command.skip, 'skip');
  const limit = count(call.command.limit, 'limit');
  const query = doc(call.command.query, 'query');
  const options = { ...(skip ? { skip } : {}), ...(limit ? { limit: Math.abs(limit) } : {}) };
  const n = await analystRead(
    call,
    { op: 'count', collection: collectionName(call), args: { query, ...options } },
    async () => {
      const coll = await collection(call, false);
      return coll ? coll.countDocuments(query, { ...options, ...sessionOption(call.session) }) : 0;
    },
    (result) => result.n ?? 0,
  );
  return { n, ok: 1 };
}

export async function distinct(call: Call): Promise<Document> {
  const key = call.command.key;
  if (typeof key !== 'string') throw new CommandError('TypeMismatch', 'distinct needs key, a field path');
  const query = doc(call.command.query, 'query');
  const values = await analystRead(
    call,
    { op: 'distinct', collection: collectionName(call), args: { key, query } },
    async () => {
      const coll = await collection(call, false);
      return coll ? coll.distinct(key, query, sessionOption(call.session)) : [];
    },
    (result) => result.values ?? [],
  );
  return { values, ok: 1 };
}
