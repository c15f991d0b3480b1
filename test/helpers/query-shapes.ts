// A Store that records the filter of every query the service sends (find, findOne, countDocuments,
// distinct, the $match of an aggregate, the filter of each update and delete), and a check of each against
// the indexes the service declares (src/compose.ts STORE_LAYOUT): on MongoDB, a filter that no index's
// first key constrains is a collection scan, over every organisation's documents.
import type { Document } from 'mongodb';
import { STORE_LAYOUT } from '../../src/compose.ts';
import type { Store, StoreCollection, StoreDb } from '../../src/store/store.ts';

export interface QueryShape {
  collection: string;
  method: string;
  filter: Record<string, unknown>;
  /** The documents a find's toArray() returned. */
  returned?: number;
}

const FILTER_FIRST = new Set(['find', 'findOne', 'countDocuments', 'updateOne', 'updateMany', 'replaceOne', 'findOneAndUpdate', 'deleteOne', 'deleteMany']);

/** The fields a filter constrains at its top level (and inside a top-level $and). */
export function constrainedFields(filter: Record<string, unknown>): Set<string> {
  const fields = new Set<string>();
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) for (const part of value) for (const f of constrainedFields(part)) fields.add(f);
    else if (!key.startsWith('$')) fields.add(key);
  }
  return fields;
}

/** The keys of each declared index (and _id's) whose first key the filter constrains: none, a collection scan. */
export function usableIndexes(shape: QueryShape): string[][] {
  const fields = constrainedFields(shape.filter);
  const declared = STORE_LAYOUT.indexes.filter((i) => i.collection === shape.collection).map((i) => Object.keys(i.keys));
  return [['_id'], ...declared].filter((keys) => fields.has(keys[0]));
}

export class QueryRecorder implements Store {
  readonly engine: Store['engine'];
  readonly db: StoreDb;
  readonly shapes: QueryShape[] = [];
  readonly #inner: Store;

  constructor(inner: Store) {
    this.#inner = inner;
    this.engine = inner.engine;
    // Both stores' `db` is a plain object of closures: spread, it keeps every member but the collections.
    this.db = { ...inner.db, collection: <T extends Document>(name: string) => this.#wrap<T>(name, inner.db.collection<T>(name)) };
  }

  #wrap<T extends Document>(name: string, collection: StoreCollection<T>): StoreCollection<T> {
    return new Proxy(collection, {
      get: (target, property) => {
        const value = Reflect.get(target, property, target);
        if (typeof value !== 'function' || typeof property !== 'string') return value;
        return (...args: unknown[]) => {
          const filter = FILTER_FIRST.has(property) ? args[0] : property === 'distinct' ? args[1] : property === 'aggregate' ? (args[0] as Array<{ $match?: unknown }>)[0]?.$match : undefined;
          const shape: QueryShape | undefined = filter ? { collection: name, method: property, filter: filter as Record<string, unknown> } : undefined;
          if (shape) this.shapes.push(shape);
          const result = value.apply(target, args);
          if (shape && property === 'find') {
            const toArray = result.toArray.bind(result);
            result.toArray = async () => {
              const docs = await toArray();
              shape.returned = docs.length;
              return docs;
            };
          }
          return result;
        };
      },
    });
  }

  /** The queries recorded since `from` that no declared index serves (an empty filter reads a whole collection on purpose). */
  collectionScans(from = 0): QueryShape[] {
    return this.shapes.slice(from).filter((s) => Object.keys(s.filter).length > 0 && usableIndexes(s).length === 0);
  }

  withTransaction: Store['withTransaction'] = (fn, options) => this.#inner.withTransaction(fn, options);

  close(): Promise<void> {
    return this.#inner.close();
  }
}
