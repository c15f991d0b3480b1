// The storage contract every part of the service codes against (DESIGN.md section 2).
// Both engines satisfy it: the official driver's Db/ClientSession, and the embedded engine.
// Types are Picks of the driver's own so that the compiler notices drift between the two.
import type { ClientSession, Collection, Db, Document } from 'mongodb';

export type CollectionMethods =
  | 'collectionName'
  | 'insertOne'
  | 'insertMany'
  | 'findOne'
  | 'find'
  | 'countDocuments'
  | 'updateOne'
  | 'updateMany'
  | 'replaceOne'
  | 'findOneAndUpdate'
  | 'deleteOne'
  | 'deleteMany'
  | 'aggregate'
  | 'createIndex'
  | 'distinct'
  | 'bulkWrite';

export type StoreCollection<T extends Document = Document> = Pick<Collection<T>, CollectionMethods>;

export interface StoreDb {
  collection<T extends Document = Document>(name: string): StoreCollection<T>;
  /** Names of the collections that hold documents (used by tests that prove nothing was written). */
  listCollectionNames(): Promise<string[]>;
  /** The raw handle Agenda's MongoBackend is given. */
  readonly raw: Db;
}

export type StoreSession = ClientSession;

export interface Store {
  readonly engine: 'embedded' | 'mongodb';
  readonly db: StoreDb;
  /**
   * Runs fn in one transaction: all of its writes commit together or none do.
   * fn may run more than once (transient errors are retried), so it must do no outside I/O.
   * Every operation inside must pass `{ session }`.
   */
  withTransaction<T>(fn: (session: StoreSession) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * True for MongoDB's duplicate-key error (code 11000), as thrown by both engines (and inside
 * the driver's bulk-write errors). On a versioned document it means a concurrent writer won.
 */
export function isDuplicateKeyError(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const e = error as { code?: unknown; writeErrors?: Array<{ code?: unknown }> };
  if (e.code === 11000) return true;
  return Array.isArray(e.writeErrors) && e.writeErrors.some((w) => w.code === 11000);
}
