// The storage contract every part of the service codes against (docs/internals/design.md §2).
// Both engines satisfy it: the official driver's Db/ClientSession, and the embedded engine.
// Types are Picks of the driver's own so that the compiler notices drift between the two.
import type { ClientBulkWriteModel, ClientBulkWriteOptions, ClientBulkWriteResult, ClientSession, Collection, Db, Document } from 'mongodb';

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
  | 'dropIndex'
  | 'indexes'
  | 'distinct'
  | 'bulkWrite';

export type StoreCollection<T extends Document = Document> = Pick<Collection<T>, CollectionMethods>;

export interface StoreDb {
  collection<T extends Document = Document>(name: string): StoreCollection<T>;
  /** Names of the collections that hold documents (used by tests that prove nothing was written). */
  listCollectionNames(): Promise<string[]>;
  /**
   * Creates the collection unless it exists, outside any transaction. Done at start for every collection
   * (src/store/indexes.ts, from src/compose.ts): implicit creation inside a transaction fails on sharded clusters.
   */
  createCollection(name: string): Promise<void>;
  /**
   * MongoDB 8's client-level bulk write (MongoClient.bulkWrite): writes to many collections of this
   * database (namespace `${raw.databaseName}.${collection}`) in one command, one round trip. Ordered
   * unless told otherwise; a failed write throws the driver's MongoClientBulkWriteError, its
   * `writeErrors` a Map from the model's index to its code and message.
   */
  bulkWrite(models: ReadonlyArray<StoreBulkWriteModel>, options?: StoreBulkWriteOptions): Promise<ClientBulkWriteResult>;
  /** The raw handle Agenda's MongoBackend is given. */
  readonly raw: Db;
}

export type StoreSession = ClientSession;

export interface StoreTransactionOptions {
  /**
   * Called once the transaction's writes are applied: every transaction this process starts from then
   * on sees them (and fails with them, should they not become durable). On MongoDB that is the commit.
   * The embedded store applies a transaction before its group commits, and acknowledges it (resolves)
   * only after: a queue of one agent's commands moves on at this signal instead of waiting for the disk.
   */
  onApplied?: () => void;
}

export type StoreBulkWriteOptions = Pick<ClientBulkWriteOptions, 'session' | 'ordered' | 'verboseResults'>;
/** A client bulk write's model, for documents with the string ids this service gives every document. */
export type StoreBulkWriteModel = ClientBulkWriteModel<Record<string, Document & { _id: string }>>;

export interface Store {
  readonly engine: 'embedded' | 'mongodb';
  readonly db: StoreDb;
  /**
   * Runs fn in one transaction: all of its writes commit together or none do.
   * fn may run more than once (transient errors are retried), so it must do no outside I/O.
   * Every operation inside must pass `{ session }`.
   */
  withTransaction<T>(fn: (session: StoreSession) => Promise<T>, options?: StoreTransactionOptions): Promise<T>;
  close(): Promise<void>;
}

/**
 * True for MongoDB's duplicate-key error (code 11000), as thrown by both engines (and inside
 * the driver's bulk-write errors). On a versioned document it means a concurrent writer won.
 */
export function isDuplicateKeyError(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const e = error as { code?: unknown; writeErrors?: Array<{ code?: unknown }> | Map<number, { code?: unknown }> };
  if (e.code === 11000) return true;
  // A collection's bulk write lists its write errors; a client bulk write maps them by the model's index.
  const writeErrors = e.writeErrors instanceof Map ? [...e.writeErrors.values()] : e.writeErrors;
  return Array.isArray(writeErrors) && writeErrors.some((w) => w.code === 11000);
}

/**
 * True when a MongoDB error carries `label` (e.g. 'TransientTransactionError': a write conflict, code 112,
 * that a retry of the whole transaction resolves). Read from the error's shape, so errors of either
 * engine, and of test doubles, are recognised alike.
 */
export function hasErrorLabel(error: unknown, label: string): boolean {
  if (error === null || typeof error !== 'object') return false;
  const e = error as { hasErrorLabel?: unknown; errorLabels?: unknown; cause?: unknown };
  if (typeof e.hasErrorLabel === 'function' && (e.hasErrorLabel as (l: string) => boolean).call(error, label)) return true;
  if (Array.isArray(e.errorLabels) && e.errorLabels.includes(label)) return true;
  // A client bulk write wraps the server's command error (a write conflict, say) as its cause.
  return e.cause !== error && hasErrorLabel(e.cause, label);
}

/**
 * The store is unavailable now: the driver gave up waiting (a deadline of src/store/mongo.ts
 * deadlineOptions), or lost its connection and its one retry did too (a failover closes the primary's
 * connections; MongoNetworkTimeoutError is a MongoNetworkError).
 */
const UNAVAILABLE_ERRORS = new Set(['MongoOperationTimeoutError', 'MongoServerSelectionError', 'MongoNetworkTimeoutError', 'MongoWaitQueueTimeoutError', 'MongoNetworkError', 'MongoPoolClearedError', 'PoolClearedOnNetworkError']);
/** MongoDB's MaxTimeMSExpired: the server stopped a read at its deadline (src/store/mongo.ts), or a commit at maxCommitTimeMS. */
const MAX_TIME_MS_EXPIRED = 50;
export const isStoreUnavailable = (error: unknown): boolean =>
  error instanceof Error &&
  (UNAVAILABLE_ERRORS.has(error.name) || (error as { code?: unknown }).code === MAX_TIME_MS_EXPIRED || (error.cause !== error && isStoreUnavailable(error.cause)));

/** SQLite's primary result code for a write that found no space (extended codes keep it in their low byte). */
const SQLITE_FULL = 13;
/** MongoDB's OutOfDiskSpace (WiredTiger could not write: ENOSPC). */
const MONGODB_OUT_OF_DISK_SPACE = 14031;
/**
 * SQLite's unix VFS says SQLITE_FULL only when write() fails with ENOSPC; a quota (EDQUOT), a failed
 * fallocate or a shared-memory file that cannot grow come back as these I/O errors, which node:sqlite
 * reports without the errno.
 */
const SQLITE_IOERR_WRITE = 778;
const SQLITE_IOERR_SHMSIZE = 4874;

/**
 * True when a write failed for lack of space: SQLite's SQLITE_FULL (node:sqlite's `errcode`), or the
 * I/O errors its quota and fallocate failures become (a write the disk refused, full or not: retrying
 * later is the answer either way), the
 * file system's ENOSPC (or EDQUOT, a quota), MongoDB's OutOfDiskSpace. Looked for through `cause`
 * and a bulk write's write errors, as the other predicates here do. Not a server failure but a
 * condition an operator clears: answered 503 with Retry-After, and readiness fails until a write
 * succeeds again (src/store/storage-space.ts).
 */
export function isStorageFull(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const e = error as { errcode?: unknown; code?: unknown; codeName?: unknown; cause?: unknown; writeErrors?: Array<{ code?: unknown }> | Map<number, { code?: unknown }> };
  if (typeof e.errcode === 'number' && (e.errcode % 256 === SQLITE_FULL || e.errcode === SQLITE_IOERR_WRITE || e.errcode === SQLITE_IOERR_SHMSIZE)) return true;
  if (e.code === 'ENOSPC' || e.code === 'EDQUOT' || e.code === MONGODB_OUT_OF_DISK_SPACE || e.codeName === 'OutOfDiskSpace') return true;
  const writeErrors = e.writeErrors instanceof Map ? [...e.writeErrors.values()] : e.writeErrors;
  if (Array.isArray(writeErrors) && writeErrors.some((w) => w.code === MONGODB_OUT_OF_DISK_SPACE)) return true;
  return e.cause !== error && isStorageFull(e.cause);
}
