// A Store wrapped for tests of the production path's concurrency rules (docs/internals/design.md §2):
// - it records what every transaction wrote (documents counted, and the ids of documents addressed by
//   _id), so a test can prove that a transaction's work is bounded, and that two operations which must
//   not interleave write a document in common (under MongoDB's snapshot isolation, two concurrent
//   transactions conflict exactly when their write sets intersect);
// - it can throw an error on chosen operations, shaped as the driver's (a MongoServerError), to drive
//   the retry paths that the embedded engine, which runs one transaction at a time, never takes.
import { MongoServerError, type ClientBulkWriteResult, type Document } from 'mongodb';
import type { Store, StoreBulkWriteModel, StoreBulkWriteOptions, StoreCollection, StoreDb, StoreSession, StoreTransactionOptions } from '../../src/store/store.ts';

export interface WriteRecord {
  collection: string;
  method: string;
  /** Documents written (inserted, matched by an update, deleted). */
  count: number;
  /** `${collection}/${_id}` of each document addressed by _id; empty when the write named none. */
  ids: string[];
}

export interface TransactionRecord {
  writes: WriteRecord[];
  outcome: 'committed' | 'failed' | 'open';
}

export interface Operation {
  collection: string;
  method: string;
  inTransaction: boolean;
}

const WRITES = ['insertOne', 'insertMany', 'updateOne', 'updateMany', 'replaceOne', 'findOneAndUpdate', 'deleteOne', 'deleteMany', 'bulkWrite'] as const;
const OPTIONS_AT: Record<string, number> = { bulkWrite: 1, insertOne: 1, insertMany: 1, updateOne: 2, updateMany: 2, replaceOne: 2, findOneAndUpdate: 2, deleteOne: 1, deleteMany: 1, findOne: 1 };

/** MongoDB's write conflict, as the driver raises it inside a transaction. */
export function writeConflict(): MongoServerError {
  return new MongoServerError({
    message: 'WriteConflict error: this operation conflicted with another operation. Please retry your operation or multi-document transaction.',
    code: 112,
    codeName: 'WriteConflict',
    errorLabels: ['TransientTransactionError'],
  });
}

const idOf = (value: unknown): string | null => (typeof value === 'string' ? value : null);

function recordOf(collection: string, method: string, args: unknown[], result: any): WriteRecord {
  const filterId = idOf((args[0] as { _id?: unknown } | undefined)?._id);
  let count = 0;
  let ids: Array<string | null> = [];
  switch (method) {
    case 'insertOne':
      count = 1;
      ids = [idOf((args[0] as { _id?: unknown })._id)];
      break;
    case 'insertMany':
      count = result.insertedCount;
      ids = (args[0] as Array<{ _id?: unknown }>).map((d) => idOf(d._id));
      break;
    case 'updateOne':
    case 'replaceOne':
      count = result.matchedCount + (result.upsertedCount ?? 0);
      ids = count > 0 ? [filterId] : [];
      break;
    case 'findOneAndUpdate':
      count = result ? 1 : 0;
      ids = result ? [idOf(result._id)] : [];
      break;
    case 'updateMany':
      count = result.matchedCount + (result.upsertedCount ?? 0);
      break;
    case 'deleteOne':
    case 'deleteMany':
      count = result.deletedCount;
      ids = method === 'deleteOne' && count > 0 ? [filterId] : [];
      break;
    case 'bulkWrite':
      // Every document an operation addresses by _id (the totals do not say which of them matched).
      count = result.insertedCount + result.matchedCount + result.upsertedCount + result.deletedCount;
      ids = (args[0] as Array<Record<string, { filter?: { _id?: unknown }; document?: { _id?: unknown } }>>).map((op) => {
        const [kind, raw] = Object.entries(op)[0];
        return idOf(kind === 'insertOne' ? raw.document?._id : kind === 'updateMany' || kind === 'deleteMany' ? null : raw.filter?._id);
      });
      break;
  }
  return { collection, method, count, ids: ids.filter((id): id is string => id !== null).map((id) => `${collection}/${id}`) };
}

export class InstrumentedStore implements Store {
  readonly engine: Store['engine'];
  readonly db: StoreDb;
  readonly transactions: TransactionRecord[] = [];
  /** Return an error to throw it instead of running the operation. */
  inject: ((op: Operation) => Error | undefined) | undefined;
  readonly #inner: Store;
  readonly #open = new Map<StoreSession, TransactionRecord>();

  constructor(inner: Store) {
    this.#inner = inner;
    this.engine = inner.engine;
    this.db = {
      collection: <T extends Document>(name: string) => this.#wrap<T>(name, inner.db.collection<T>(name)),
      listCollectionNames: () => inner.db.listCollectionNames(),
      createCollection: (name) => inner.db.createCollection(name),
      bulkWrite: (models, options) => this.#bulkWrite(inner.db, models, options),
      raw: inner.db.raw,
    };
  }

  #wrap<T extends Document>(name: string, collection: StoreCollection<T>): StoreCollection<T> {
    const methods = new Set<string>([...WRITES, 'findOne']);
    return new Proxy(collection, {
      get: (target, property) => {
        const value = Reflect.get(target, property, target);
        if (typeof value !== 'function') return value;
        if (typeof property !== 'string' || !methods.has(property)) return value.bind(target);
        return async (...args: unknown[]) => {
          const session = (args[OPTIONS_AT[property]] as { session?: StoreSession } | undefined)?.session;
          const record = session ? this.#open.get(session) : undefined;
          const error = this.inject?.({ collection: name, method: property, inTransaction: record !== undefined });
          if (error) throw error;
          const result = await value.apply(target, args);
          if (record && property !== 'findOne') record.writes.push(recordOf(name, property, args, result));
          return result;
        };
      },
    });
  }

  /** A client bulk write: each model is an operation (injectable) and, once written, a write of its transaction. */
  async #bulkWrite(inner: StoreDb, models: ReadonlyArray<StoreBulkWriteModel>, options: StoreBulkWriteOptions = {}): Promise<ClientBulkWriteResult> {
    const record = options.session ? this.#open.get(options.session) : undefined;
    const operations = models.map((model) => {
      const collection = model.namespace.slice(model.namespace.indexOf('.') + 1);
      const error = this.inject?.({ collection, method: model.name, inTransaction: record !== undefined });
      if (error) throw error;
      return { collection, model };
    });
    const result = await inner.bulkWrite(models, options);
    for (const { collection, model } of operations) {
      const id = idOf(model.name === 'insertOne' ? model.document._id : model.name === 'updateMany' || model.name === 'deleteMany' ? undefined : (model.filter as { _id?: unknown })._id);
      record?.writes.push({ collection, method: model.name, count: 1, ids: id === null ? [] : [`${collection}/${id}`] });
    }
    return result;
  }

  async withTransaction<T>(fn: (session: StoreSession) => Promise<T>, options?: StoreTransactionOptions): Promise<T> {
    return this.#inner.withTransaction(async (session) => {
      const record: TransactionRecord = { writes: [], outcome: 'open' };
      this.transactions.push(record);
      this.#open.set(session, record);
      try {
        const result = await fn(session);
        record.outcome = 'committed';
        return result;
      } catch (error) {
        record.outcome = 'failed';
        throw error;
      } finally {
        this.#open.delete(session);
      }
    }, options);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

/** Documents written by a transaction. */
export const documentsWritten = (t: TransactionRecord): number => t.writes.reduce((sum, w) => sum + w.count, 0);

/** The ids of documents a transaction wrote by _id. */
export const writeSet = (t: TransactionRecord): Set<string> => new Set(t.writes.flatMap((w) => w.ids));

/** What two transactions both wrote: non-empty means MongoDB lets only one of them commit if they overlap in time. */
export function commonWrites(a: TransactionRecord, b: TransactionRecord): string[] {
  const other = writeSet(b);
  return [...writeSet(a)].filter((id) => other.has(id));
}
