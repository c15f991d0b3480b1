// Collections and indexes, created idempotently at start and by the Procfile's release step (docs/internals/design.md
// §2). What to create is each capability's to say (its `capability.ts`); src/compose.ts gathers it.
import type { StoreDb } from './store.ts';

export interface IndexSpec {
  collection: string;
  keys: Record<string, 1 | -1>;
  options?: { unique?: boolean; expireAfterSeconds?: number; name?: string; partialFilterExpression?: Record<string, unknown> };
}

/** An index of an earlier version that another replaced: dropped at start, by the name MongoDB gave it. */
export interface RetiredIndex {
  collection: string;
  name: string;
}

export interface StoreLayout {
  /**
   * Every collection the service writes, created at start: implicit creation inside a transaction fails
   * on sharded clusters (and a collection without an index, say, would never be created otherwise).
   */
  collections: readonly string[];
  indexes: readonly IndexSpec[];
  /** Dropped after the new indexes are built, so that existing databases stop maintaining their keys. */
  retired: readonly RetiredIndex[];
  /** Run before any index is built (to clear what would stop a unique one). */
  before: ReadonlyArray<(db: StoreDb) => Promise<void>>;
}

export async function createIndexes(db: StoreDb, layout: StoreLayout): Promise<void> {
  const existing = new Set(await db.listCollectionNames());
  for (const name of layout.collections) if (!existing.has(name)) await db.createCollection(name);
  for (const prepare of layout.before) await prepare(db);
  for (const spec of layout.indexes) {
    await db.collection(spec.collection).createIndex(spec.keys, spec.options ?? {});
  }
  for (const { collection, name } of layout.retired) {
    try {
      await db.collection(collection).dropIndex(name);
    } catch (error) {
      // IndexNotFound: already gone (dropped at an earlier start, or just now by another process starting).
      if ((error as { code?: unknown }).code !== 27) throw error;
    }
  }
}
