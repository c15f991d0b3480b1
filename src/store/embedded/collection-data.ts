// The storage of one embedded collection: documents in a Map keyed by the canonical _id, and
// every index as a Map from key to document ids, so that equality lookups on _id or on an
// index's fields are O(1) rather than scans. Unique indexes refuse duplicates with the
// driver's own error shape (code 11000).
import { MongoServerError } from 'mongodb';
import { Query } from 'mingo';
import { canonicalKey, hasPath, isIndexableScalar, readPath, type Doc } from './values.ts';

export interface IndexOptions {
  name?: string;
  unique?: boolean;
  sparse?: boolean;
  partialFilterExpression?: Doc;
  expireAfterSeconds?: number;
}

export class Index {
  readonly name: string;
  readonly fields: string[];
  readonly keyPattern: Doc;
  readonly unique: boolean;
  readonly sparse: boolean;
  readonly partialFilterExpression: Doc | undefined;
  readonly expireAfterSeconds: number | undefined;
  readonly #partial: Query | undefined;
  /** Set once any indexed value was an array; such an index no longer answers equality lookups. */
  multikey = false;
  /** Set once a value of the first field was an array; prefix lookups then stop too. */
  firstMultikey = false;
  readonly entries = new Map<string, Set<string>>();
  /** For a compound index, the ids by the first field alone: equality on a prefix. */
  readonly firstEntries: Map<string, Set<string>> | undefined;

  constructor(keyPattern: Doc, options: IndexOptions) {
    this.keyPattern = { ...keyPattern };
    this.fields = Object.keys(keyPattern);
    this.name = options.name ?? defaultIndexName(keyPattern);
    this.unique = options.unique === true;
    this.sparse = options.sparse === true;
    this.partialFilterExpression = options.partialFilterExpression;
    this.#partial = options.partialFilterExpression ? new Query(options.partialFilterExpression) : undefined;
    this.expireAfterSeconds = options.expireAfterSeconds;
    this.firstEntries = this.fields.length > 1 ? new Map() : undefined;
  }

  signature(): string {
    return canonicalKey([
      this.keyPattern,
      this.unique,
      this.sparse,
      this.partialFilterExpression ?? null,
      this.expireAfterSeconds ?? null,
    ]);
  }

  /** Usable for equality lookups: every document is in it and no value is an array. */
  get complete(): boolean {
    return !this.multikey && !this.sparse && this.#partial === undefined;
  }

  /** Usable for equality lookups on the first field alone. */
  get prefixComplete(): boolean {
    return this.firstEntries !== undefined && !this.firstMultikey && !this.sparse && this.#partial === undefined;
  }

  /** The index key of doc, or undefined when a sparse or partial index leaves it out. */
  keyOf(doc: Doc): string | undefined {
    if (this.#partial && !this.#partial.test(doc)) return undefined;
    if (this.sparse && this.fields.every((f) => !hasPath(doc, f))) return undefined;
    if (this.fields.length === 1) {
      const pv = readPath(doc, this.fields[0]);
      if (pv.multikey) this.multikey = true;
      return canonicalKey(pv.value);
    }
    let key = '';
    for (const f of this.fields) {
      const pv = readPath(doc, f);
      if (pv.multikey) {
        this.multikey = true;
        if (f === this.fields[0]) this.firstMultikey = true;
      }
      const part = canonicalKey(pv.value);
      key += part.length + ':' + part;
    }
    return key;
  }

  keyOfValues(values: unknown[]): string {
    if (values.length === 1) return canonicalKey(values[0]);
    let key = '';
    for (const v of values) {
      const part = canonicalKey(v);
      key += part.length + ':' + part;
    }
    return key;
  }

  add(doc: Doc, id: string): void {
    const key = this.keyOf(doc);
    if (key === undefined) return;
    addTo(this.entries, key, id);
    if (this.firstEntries) addTo(this.firstEntries, canonicalKey(readPath(doc, this.fields[0]).value), id);
  }

  remove(doc: Doc, id: string): void {
    const key = this.keyOf(doc);
    if (key === undefined) return;
    removeFrom(this.entries, key, id);
    if (this.firstEntries) removeFrom(this.firstEntries, canonicalKey(readPath(doc, this.fields[0]).value), id);
  }

  /** Moves a document from its previous key to its next one; most updates leave indexed fields alone. */
  move(prev: Doc, next: Doc, id: string): void {
    const before = this.keyOf(prev);
    const after = this.keyOf(next);
    if (before === after && (!this.firstEntries || canonicalKey(readPath(prev, this.fields[0]).value) === canonicalKey(readPath(next, this.fields[0]).value))) return;
    this.remove(prev, id);
    this.add(next, id);
  }

  /** The id of another document holding doc's key in this unique index, if any. */
  conflict(doc: Doc, id: string): string | undefined {
    if (!this.unique) return undefined;
    const key = this.keyOf(doc);
    if (key === undefined) return undefined;
    const set = this.entries.get(key);
    if (!set) return undefined;
    for (const other of set) if (other !== id) return other;
    return undefined;
  }
}

function addTo(map: Map<string, Set<string>>, key: string, id: string): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(id);
}

function removeFrom(map: Map<string, Set<string>>, key: string, id: string): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(id);
  if (set.size === 0) map.delete(key);
}

export function defaultIndexName(keyPattern: Doc): string {
  return Object.entries(keyPattern)
    .map(([k, v]) => `${k}_${String(v)}`)
    .join('_');
}

/** The value an equality filter on one field asks for, if it is a plain equality on a scalar. */
function equalityValue(cond: unknown): { ok: true; value: unknown } | { ok: false } {
  if (isIndexableScalar(cond)) return { ok: true, value: cond };
  if (cond !== null && typeof cond === 'object' && !Array.isArray(cond)) {
    const keys = Object.keys(cond);
    if (keys.length === 1 && keys[0] === '$eq' && isIndexableScalar((cond as Doc).$eq)) {
      return { ok: true, value: (cond as Doc).$eq };
    }
  }
  return { ok: false };
}

export interface Plan {
  /** Documents that may match (a superset of the matches), in natural order. */
  candidates: Iterable<[string, Doc]>;
  /** Every candidate matches: the filter need not be evaluated again. */
  exact: boolean;
}

export class CollectionData {
  readonly dbName: string;
  readonly name: string;
  readonly docs = new Map<string, Doc>();
  readonly indexes = new Map<string, Index>();
  /** Whether MongoDB would list the collection (it received a document or an index). */
  exists = false;

  constructor(dbName: string, name: string) {
    this.dbName = dbName;
    this.name = name;
  }

  plan(filter: Doc): Plan {
    const keys = Object.keys(filter);
    if (keys.length === 0) return { candidates: this.docs.entries(), exact: true };
    if (Object.hasOwn(filter, '_id')) {
      const eq = equalityValue(filter._id);
      if (eq.ok) {
        const id = canonicalKey(eq.value);
        const doc = this.docs.get(id);
        return { candidates: doc ? [[id, doc]] : [], exact: keys.length === 1 };
      }
      const cond = filter._id;
      if (cond !== null && typeof cond === 'object' && !Array.isArray(cond)) {
        const inList = (cond as Doc).$in;
        if (Object.keys(cond).length === 1 && Array.isArray(inList) && inList.every(isIndexableScalar)) {
          const out = new Map<string, Doc>();
          for (const v of inList) {
            const id = canonicalKey(v);
            const doc = this.docs.get(id);
            if (doc) out.set(id, doc);
          }
          return { candidates: out.entries(), exact: keys.length === 1 };
        }
      }
    }
    let best: { ids: Set<string> | undefined; exact: boolean } | undefined;
    for (const index of this.indexes.values()) {
      if (!index.complete && !index.prefixComplete) continue;
      const values: unknown[] = [];
      for (const f of index.fields) {
        if (!Object.hasOwn(filter, f)) break;
        const eq = equalityValue(filter[f]);
        if (!eq.ok) break;
        values.push(eq.value);
      }
      let ids: Set<string> | undefined;
      let exact = false;
      if (values.length === index.fields.length && index.complete) {
        ids = index.entries.get(index.keyOfValues(values));
        exact = keys.length === index.fields.length;
      } else if (values.length > 0 && index.prefixComplete) {
        ids = index.firstEntries?.get(canonicalKey(values[0]));
        exact = keys.length === 1;
      } else {
        continue;
      }
      const size = ids?.size ?? 0;
      if (!best || size < (best.ids?.size ?? 0)) best = { ids, exact };
      if (size <= 1) break;
    }
    if (best) {
      const out: Array<[string, Doc]> = [];
      if (best.ids) for (const id of best.ids) out.push([id, this.docs.get(id) as Doc]);
      return { candidates: out, exact: best.exact };
    }
    return { candidates: this.docs.entries(), exact: false };
  }

  /** Throws the duplicate-key error if doc (stored under id) would break a unique index. */
  checkUnique(doc: Doc, id: string, isNew: boolean): void {
    if (isNew && this.docs.has(id)) throw this.duplicateKeyError('_id_', { _id: 1 }, doc);
    for (const index of this.indexes.values()) {
      if (index.conflict(doc, id) !== undefined) throw this.duplicateKeyError(index.name, index.keyPattern, doc);
    }
  }

  duplicateKeyError(indexName: string, keyPattern: Doc, doc: Doc): MongoServerError {
    const keyValue: Doc = {};
    for (const f of Object.keys(keyPattern)) keyValue[f] = readPath(doc, f).value;
    const shown = Object.entries(keyValue)
      .map(([k, v]) => `${k}: ${typeof v === 'string' ? JSON.stringify(v) : String(v)}`)
      .join(', ');
    const errmsg = `E11000 duplicate key error collection: ${this.dbName}.${this.name} index: ${indexName} dup key: { ${shown} }`;
    // The driver's own class, so that `instanceof MongoServerError` and `code === 11000`
    // checks behave the same on both engines.
    return new MongoServerError({ message: errmsg, errmsg, code: 11000, codeName: 'DuplicateKey', keyPattern, keyValue });
  }

  /** Stores doc without checks (callers check first; undo uses it directly). */
  put(id: string, doc: Doc): void {
    this.docs.set(id, doc);
    for (const index of this.indexes.values()) index.add(doc, id);
  }

  take(id: string): Doc | undefined {
    const doc = this.docs.get(id);
    if (!doc) return undefined;
    this.docs.delete(id);
    for (const index of this.indexes.values()) index.remove(doc, id);
    return doc;
  }

  /** Replaces the stored document, keeping every index in step. */
  swap(id: string, next: Doc): Doc | undefined {
    const prev = this.docs.get(id);
    this.docs.set(id, next);
    for (const index of this.indexes.values()) {
      if (prev) index.move(prev, next, id);
      else index.add(next, id);
    }
    return prev;
  }

  addIndex(keyPattern: Doc, options: IndexOptions): string {
    const index = new Index(keyPattern, options);
    const existing = this.indexes.get(index.name);
    // As MongoDB: re-creating an identical index is a no-op; a different one under the same
    // name, or the same keys under another name, is refused.
    if (existing) {
      if (index.signature() !== existing.signature()) {
        throw new MongoServerError({
          message: `An existing index has the same name as the requested index: ${index.name}`,
          code: 86,
          codeName: 'IndexKeySpecsConflict',
        });
      }
      return existing.name;
    }
    for (const other of this.indexes.values()) {
      if (canonicalKey(other.keyPattern) === canonicalKey(index.keyPattern)) {
        throw new MongoServerError({
          message: `Index already exists with a different name: ${other.name}`,
          code: 85,
          codeName: 'IndexOptionsConflict',
        });
      }
    }
    for (const [id, doc] of this.docs) {
      if (index.conflict(doc, id) !== undefined) throw this.duplicateKeyError(index.name, index.keyPattern, doc);
      index.add(doc, id);
    }
    this.indexes.set(index.name, index);
    this.exists = true;
    return index.name;
  }
}
