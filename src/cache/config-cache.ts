// A per-process cache of what every request reads and operators rarely change: API keys,
// organisations, agents, the policies in force and webhook subscriptions.
//
// Invalidation is a version stamp in the store, not a timer: every write to those collections bumps
// one counter (in the writer's transaction when it has one), and every request reads the counter
// first. A cached value is used only while the counter still has the value it had before the value
// was loaded, so a manifest apply, a status change or a new policy version is seen by the next
// request in every process that shares the store. Reading the counter before loading makes a value
// at least as new as its stamp; a value loaded under an older stamp is never served under a newer one.
//
// Values are shared between requests and frozen: callers must not change them.
import type { Document } from 'mongodb';
import type { StoreCollection, StoreDb, StoreSession } from '../store/store.ts';

export interface ConfigStampDoc {
  _id: string;
  version: number;
}

const STAMP_ID = 'config';
const ENTRY_LIMIT = 20_000;

export const configStamps = (db: StoreDb) => db.collection<ConfigStampDoc>('config_stamps');

/** Tells every process that cached configuration changed. Pass the writer's session when it has one. */
export async function bumpConfigStamp(db: StoreDb, session?: StoreSession): Promise<void> {
  await configStamps(db).updateOne({ _id: STAMP_ID }, { $inc: { version: 1 } }, session ? { session, upsert: true } : { upsert: true });
}

async function readStamp(db: StoreDb, session?: StoreSession): Promise<number> {
  const doc = await configStamps(db).findOne({ _id: STAMP_ID }, session ? { session } : {});
  return doc?.version ?? 0;
}

interface Entry {
  stamp: number;
  value: unknown;
}

class ConfigCache {
  readonly entries = new Map<string, Entry>();
  stamp = -1;
}

const caches = new WeakMap<StoreDb, ConfigCache>();
// The view a transaction attempt opened, for code deeper in the same attempt (recordEvent).
const sessionViews = new WeakMap<StoreSession, ConfigView>();

/** Cached configuration as of one read of the stamp. */
export class ConfigView {
  readonly #cache: ConfigCache;
  readonly stamp: number;

  constructor(cache: ConfigCache, stamp: number) {
    this.#cache = cache;
    this.stamp = stamp;
  }

  /** The value under `key` loaded at this stamp, loading it with `load` if there is none. */
  async get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const cache = this.#cache;
    const hit = cache.entries.get(key);
    if (hit !== undefined && hit.stamp === this.stamp) return hit.value as T;
    const value = await load();
    if (value !== null && typeof value === 'object') Object.freeze(value);
    if (cache.stamp === this.stamp) {
      if (cache.entries.size >= ENTRY_LIMIT) cache.entries.clear();
      cache.entries.set(key, { stamp: this.stamp, value });
    }
    return value;
  }
}

async function openView(db: StoreDb, session?: StoreSession): Promise<ConfigView> {
  let cache = caches.get(db);
  if (cache === undefined) caches.set(db, (cache = new ConfigCache()));
  const stamp = await readStamp(db, session);
  if (stamp !== cache.stamp) {
    // Values of older stamps can never be served again.
    cache.entries.clear();
    cache.stamp = stamp;
  }
  return new ConfigView(cache, stamp);
}

/**
 * Reads the stamp (inside the transaction when given its session) and returns the view of the cache
 * at that stamp. Opened with a session at the start of a transaction attempt, it is also what
 * `viewIn(session)` returns for the rest of that attempt.
 */
export async function configView(db: StoreDb, session?: StoreSession): Promise<ConfigView> {
  const view = await openView(db, session);
  if (session) sessionViews.set(session, view);
  return view;
}

/** The view this transaction attempt opened, or a fresh one read in it. */
export async function viewIn(db: StoreDb, session: StoreSession): Promise<ConfigView> {
  return sessionViews.get(session) ?? openView(db, session);
}

/** A write's result says it changed a document (a write that matched nothing changes no cached value). */
function changedSomething(result: unknown): boolean {
  if (result === null || result === undefined) return false; // findOneAndUpdate that matched nothing
  const r = result as { insertedId?: unknown; insertedCount?: number; modifiedCount?: number; deletedCount?: number; upsertedCount?: number; _id?: unknown; value?: unknown };
  if ('value' in r && 'ok' in r) return r.value !== null && r.value !== undefined; // findOneAndUpdate with includeResultMetadata
  if (r.insertedId !== undefined || r._id !== undefined) return true; // insertOne; findOneAndUpdate's document
  return (r.insertedCount ?? 0) + (r.modifiedCount ?? 0) + (r.deletedCount ?? 0) + (r.upsertedCount ?? 0) > 0;
}

/**
 * The collection with every write that changed something followed by a bump of the stamp, in the writer's session when it
 * has one: for the collections whose documents are cached, so that no writer can forget.
 */
export function stamped<T extends Document>(db: StoreDb, collection: StoreCollection<T>): StoreCollection<T> {
  const c = collection as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const write =
    (name: string, optionsAt: number) =>
    async (...args: unknown[]) => {
      const result = await c[name].apply(collection, args);
      if (changedSomething(result)) await bumpConfigStamp(db, (args[optionsAt] as { session?: StoreSession } | undefined)?.session);
      return result;
    };
  const read = (name: string) => c[name].bind(collection);
  return {
    get collectionName() {
      return collection.collectionName;
    },
    findOne: read('findOne'),
    find: read('find'),
    countDocuments: read('countDocuments'),
    aggregate: read('aggregate'),
    createIndex: read('createIndex'),
    dropIndex: read('dropIndex'),
    distinct: read('distinct'),
    insertOne: write('insertOne', 1),
    insertMany: write('insertMany', 1),
    updateOne: write('updateOne', 2),
    updateMany: write('updateMany', 2),
    replaceOne: write('replaceOne', 2),
    findOneAndUpdate: write('findOneAndUpdate', 2),
    deleteOne: write('deleteOne', 1),
    deleteMany: write('deleteMany', 1),
  } as unknown as StoreCollection<T>;
}
