// A Store that records the filter of every query the service sends (find, findOne, countDocuments,
// distinct, the $match of an aggregate, the filter of each update and delete), and a check of each against
// the indexes the service declares (src/compose.ts STORE_LAYOUT): on MongoDB, a filter that no index's
// first key constrains is a collection scan, over every organisation's documents.
import type { Document } from 'mongodb';
import { STORE_LAYOUT } from '../../src/compose.ts';
import type { IndexSpec } from '../../src/store/indexes.ts';
import type { Store, StoreCollection, StoreDb } from '../../src/store/store.ts';
import type { TestApp } from './app.ts';
import { setUpDashboardOrg, startDashboardApp, type DashboardOrg } from './dashboard.ts';
import { testStore } from './store.ts';

export interface QueryShape {
  collection: string;
  method: string;
  filter: Record<string, unknown>;
  /** The documents a find's toArray() returned. */
  returned?: number;
  /** A find's sort. */
  sort?: Record<string, 1 | -1>;
  /** The top-level fields of the documents a find's toArray() returned: what the store sent. */
  fields?: Set<string>;
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

/** The keys of _id's index and of each index the service declares on the collection. */
const declaredIndexes = (collection: string): Array<IndexSpec['keys']> => [{ _id: 1 }, ...STORE_LAYOUT.indexes.filter((i) => i.collection === collection).map((i) => i.keys)];

/** The keys of each declared index (and _id's) whose first key the filter constrains: none, a collection scan. */
export function usableIndexes(shape: QueryShape): string[][] {
  const fields = constrainedFields(shape.filter);
  return declaredIndexes(shape.collection)
    .map((keys) => Object.keys(keys))
    .filter((keys) => fields.has(keys[0]));
}

/** The fields a filter fixes by equality (a value, or `$eq`) at its top level. */
function equalityFields(filter: Record<string, unknown>): Set<string> {
  const isOperators = (v: unknown) => v !== null && typeof v === 'object' && !(v instanceof Date) && !Array.isArray(v) && Object.keys(v).some((k) => k.startsWith('$'));
  return new Set(Object.entries(filter).filter(([k, v]) => !k.startsWith('$') && (!isOperators(v) || '$eq' in (v as object))).map(([k]) => k));
}

/** The leading keys of an index that the filter's fields bound (an index scan narrows by these; the rest it reads through). */
function boundedPrefix(keys: string[], fields: Set<string>): string[] {
  const end = keys.findIndex((k) => !fields.has(k));
  return end === -1 ? keys : keys.slice(0, end);
}

/**
 * Whether an index scan gives documents in `sort`'s order: after index keys the filter fixes by equality, the
 * sort's fields (less those fixed, whose order is given) follow in order, each direction as the index's or all reversed.
 */
function givesOrder(index: IndexSpec['keys'], sort: Record<string, 1 | -1>, equal: Set<string>): boolean {
  const keys = Object.keys(index);
  const wanted = Object.entries(sort).filter(([k]) => !equal.has(k));
  for (let start = 0; start + wanted.length <= keys.length; start++) {
    if (start > 0 && !equal.has(keys[start - 1])) return false;
    const relative = wanted.map(([k, d]) => d * index[k]);
    if (wanted.every(([k], i) => keys[start + i] === k) && relative.every((r) => r === relative[0])) return true;
  }
  return false;
}

/**
 * What a declared index serves only in part. A top-level `$or` each of whose branches no index bounds by the
 * branch's own fields (with the filter's others): MongoDB then reads every document the other fields select
 * (an organisation's whole history, say) and filters the `$or` after fetching. A sort no index gives in order
 * after the filter's equality fields: MongoDB sorts every matching document in memory before the first comes back.
 */
export function partlyServed(shape: QueryShape): string[] {
  const declared = declaredIndexes(shape.collection).map((keys) => Object.keys(keys));
  const outer = constrainedFields(shape.filter);
  const problems: string[] = [];
  const branches = Array.isArray(shape.filter.$or) ? (shape.filter.$or as Array<Record<string, unknown>>) : [];
  for (const branch of branches) {
    const own = constrainedFields(branch);
    const fields = new Set([...outer, ...own]);
    if (!declared.some((keys) => boundedPrefix(keys, fields).some((k) => own.has(k)))) problems.push(`$or branch ${JSON.stringify(branch)} bounded by no index`);
  }
  if (shape.sort && !declaredIndexes(shape.collection).some((index) => givesOrder(index, shape.sort!, equalityFields(shape.filter)))) {
    problems.push(`sort ${JSON.stringify(shape.sort)} in memory`);
  }
  return problems;
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
            const sort = result.sort.bind(result);
            result.sort = (by: Record<string, 1 | -1>) => {
              shape.sort = by;
              return sort(by);
            };
            const toArray = result.toArray.bind(result);
            result.toArray = async () => {
              const docs = await toArray();
              shape.returned = docs.length;
              shape.fields = new Set(docs.flatMap((d: Document) => Object.keys(d)));
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

  /** The queries recorded since `from` that declared indexes serve only in part (partlyServed), with what is missing. */
  partlyIndexed(from = 0): Array<QueryShape & { problems: string[] }> {
    return this.shapes
      .slice(from)
      .map((s) => ({ ...s, problems: partlyServed(s) }))
      .filter((s) => s.problems.length > 0);
  }

  withTransaction: Store['withTransaction'] = (fn, options) => this.#inner.withTransaction(fn, options);

  close(): Promise<void> {
    return this.#inner.close();
  }
}

/** The app over a QueryRecorder, with one organisation whose admin, Ana (ana@<handle>.example), signs in to the dashboard. */
export async function startRecordedApp(handle: string): Promise<{ app: TestApp; store: QueryRecorder; org: DashboardOrg }> {
  const store = new QueryRecorder(await testStore());
  const app = await startDashboardApp({ store });
  const org = await setUpDashboardOrg(app, handle, [{ handle: 'ana', name: 'Ana Admin', email: `ana@${handle}.example`, roles: ['admin', 'approver'] }]);
  return { app, store, org };
}
