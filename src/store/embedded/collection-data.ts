// The storage of one embedded collection in SQLite: a table of (r, id, doc, ks) where r is the
// natural (insertion) order, id the canonical _id (UNIQUE), doc the Extended JSON text and ks the
// document's index keys (below). Every secondary index keeps its keys in the shared _sc_keys
// table, one row per key and document, computed here with MongoDB's rules (a key per array
// element, sparse, partial); SQLite's own indexes make lookups by _id and by those keys index
// seeks, and a partial UNIQUE index over _sc_keys enforces unique indexes, surfacing as the
// driver's code 11000 error.
//
// ks holds, as JSON ({"<ix>": [k, ...]}, NULL for none), exactly the keys written for the row:
// replacing or removing a document deletes those by _sc_keys's primary key, which needs no
// index of _sc_keys by row (a B-tree that every write would have to keep up to date). The keys
// are never recomputed from the stored text: they were computed from the caller's values, and
// some do not survive the round trip (an invalid Date is stored as null, for one).
import { MongoServerError } from 'mongodb';
import type { Query } from 'mingo';
import { queryOf } from './queries.ts';
import { quoteIdent, tableOf } from './table-names.ts';
import type { StatementSync } from 'node:sqlite';
import { canonicalKey, decode, encode, hasPath, isIndexableScalar, isObjectId, memo, ownField, readPath, type Doc } from './values.ts';

export interface IndexOptions {
  name?: string;
  unique?: boolean;
  sparse?: boolean;
  partialFilterExpression?: Doc;
  expireAfterSeconds?: number;
}

/** A matching row: its natural-order number and the decoded document. */
export type Row = [number, Doc];

/** A row as SQLite returns it, and as the row cache keeps it. */
interface StoredRow {
  r: number;
  doc: string;
  /**
   * The decoded document, when the store's own update wrote it and nobody else holds it (see
   * CollectionData.byId): the next update of the row in the group takes it instead of decoding doc.
   */
  live?: Doc;
}

/** Keys written by one INSERT at most (5 parameters each). */
const KEY_ROWS_PER_STATEMENT = 32;

const insertKeysSql = memo(KEY_ROWS_PER_STATEMENT, (rows: number): string => 'INSERT INTO _sc_keys (ix, k, r, u, t) VALUES ' + Array(rows).fill('(?, ?, ?, ?, ?)').join(', '));

/** How many rows a collection remembers in a write group at most (see CollectionData.byId). */
const RECENT_ROWS = 512;

/** What a collection needs of the engine that owns it (engine.ts's Engine is one). */
export interface CollectionHost {
  readonly dbName: string;
  /** A prepared statement, cached by its text. */
  statement(sql: string): StatementSync;
  /** Creates the collection's table unless it exists. */
  createTable(name: string): void;
  /** Moves on whenever rows remembered in the open group may no longer be what SQLite holds; undefined outside a group. */
  readonly rowEpoch: number | undefined;
  /** The number an index of the collection is known by in the key table, recorded if new. */
  recordIndex(collection: string, spec: Doc): number;
}

const SQLITE_CONSTRAINT_UNIQUE = 2067;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;

export function isConstraintError(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return code === SQLITE_CONSTRAINT_UNIQUE || code === SQLITE_CONSTRAINT_PRIMARYKEY;
}


function keyPart(v: unknown): string {
  const k = canonicalKey(v);
  return k.length + ':' + k;
}

/**
 * The index values of one path, as MongoDB's indexes see them: an array contributes each of its
 * elements (an empty array itself), an array of documents on the way contributes each element's
 * field, and a missing field reads as null.
 */
function valuesAt(doc: Doc, parts: string[]): unknown[] {
  const out: unknown[] = [];
  const walk = (cur: unknown, i: number): void => {
    if (i === parts.length) {
      if (Array.isArray(cur)) {
        if (cur.length === 0) out.push(cur);
        else for (const e of cur) out.push(e === undefined ? null : e);
      } else out.push(cur === undefined ? null : cur);
      return;
    }
    if (Array.isArray(cur)) {
      if (/^\d+$/.test(parts[i])) return walk(cur[Number(parts[i])], i + 1);
      let any = false;
      for (const e of cur) {
        if (e !== null && typeof e === 'object' && !Array.isArray(e) && !(e instanceof Date)) {
          any = true;
          walk(e, i);
        }
      }
      if (!any) out.push(null);
      return;
    }
    if (cur === null || typeof cur !== 'object' || cur instanceof Date || isObjectId(cur)) return void out.push(null);
    walk(ownField(cur as Doc, parts[i]), i + 1);
  };
  walk(doc, 0);
  return out;
}

export interface IndexKey {
  k: string;
  /** For a TTL index: the key's date in ms since the epoch. */
  t: number | null;
}

export class Index {
  readonly ix: number;
  readonly name: string;
  readonly fields: string[];
  readonly #paths: string[][];
  /** The top-level fields its keys depend on (key fields and partial filter fields). */
  readonly roots: string[];
  readonly keyPattern: Doc;
  readonly unique: boolean;
  readonly sparse: boolean;
  readonly partialFilterExpression: Doc | undefined;
  readonly expireAfterSeconds: number | undefined;
  readonly #partial: Query | undefined;

  constructor(ix: number, keyPattern: Doc, options: IndexOptions) {
    this.ix = ix;
    this.keyPattern = { ...keyPattern };
    this.fields = Object.keys(keyPattern);
    this.#paths = this.fields.map((f) => f.split('.'));
    this.roots = [...new Set([...this.#paths.map((p) => p[0]), ...partialRoots(options.partialFilterExpression)])];
    this.name = options.name ?? defaultIndexName(keyPattern);
    this.unique = options.unique === true;
    this.sparse = options.sparse === true;
    this.partialFilterExpression = options.partialFilterExpression;
    this.#partial = options.partialFilterExpression ? queryOf(options.partialFilterExpression) : undefined;
    this.expireAfterSeconds = options.expireAfterSeconds;
  }

  /** The stored definition (what createIndex was given). */
  spec(): Doc {
    const spec: Doc = { key: this.keyPattern, name: this.name };
    if (this.unique) spec.unique = true;
    if (this.sparse) spec.sparse = true;
    if (this.partialFilterExpression) spec.partialFilterExpression = this.partialFilterExpression;
    if (this.expireAfterSeconds !== undefined) spec.expireAfterSeconds = this.expireAfterSeconds;
    return spec;
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

  /** Usable for equality lookups: every document has its keys in it. */
  get complete(): boolean {
    return !this.sparse && this.#partial === undefined;
  }

  /**
   * Usable for this filter's equality lookups: complete, or partial with a filter that asks for its
   * expression's own equalities (`{origin: 'DASHBOARD'}`), so that every match has its keys in it. As
   * MongoDB, which uses a partial index only for a query that implies its filter expression.
   */
  servesFilter(filter: Doc): boolean {
    if (this.complete) return true;
    if (this.sparse || !this.partialFilterExpression) return false;
    return Object.entries(this.partialFilterExpression).every(([field, wanted]) => {
      const asked = Object.hasOwn(filter, field) ? equalityValue(filter[field]) : { ok: false as const };
      return isIndexableScalar(wanted) && asked.ok && asked.value === wanted;
    });
  }

  /** The distinct keys of doc (one per combination of array elements), none when left out. */
  keysOf(doc: Doc): IndexKey[] {
    if (this.#partial && !this.#partial.test(doc)) return [];
    if (this.sparse && this.fields.every((f) => !hasPath(doc, f))) return [];
    let keys: Array<{ k: string; first: unknown }> = [{ k: '', first: undefined }];
    this.#paths.forEach((path, i) => {
      const values = valuesAt(doc, path);
      const next: typeof keys = [];
      for (const prefix of keys) for (const v of values) next.push({ k: prefix.k + keyPart(v), first: i === 0 ? v : prefix.first });
      keys = next;
    });
    const seen = new Map<string, IndexKey>();
    for (const { k, first } of keys) {
      if (!seen.has(k)) seen.set(k, { k, t: this.expireAfterSeconds !== undefined && first instanceof Date ? first.getTime() : null });
    }
    return [...seen.values()];
  }
}

/** Top-level fields a partial filter reads (through $and, $or and the like). */
function partialRoots(filter: Doc | undefined): string[] {
  if (!filter) return [];
  const out: string[] = [];
  const walk = (f: unknown): void => {
    if (Array.isArray(f)) return f.forEach(walk);
    if (f === null || typeof f !== 'object') return;
    for (const [k, v] of Object.entries(f)) {
      if (k.startsWith('$')) walk(v);
      else out.push(k.split('.')[0]);
    }
  };
  walk(filter);
  return out;
}

export function defaultIndexName(keyPattern: Doc): string {
  return Object.entries(keyPattern)
    .map(([k, v]) => `${k}_${String(v)}`)
    .join('_');
}

/** The value an equality filter on one field asks for, if it is a plain equality on a scalar. */
function equalityValue(cond: unknown): { ok: true; value: unknown } | { ok: false } {
  if (isIndexableScalar(cond)) return { ok: true, value: cond };
  if (cond !== null && typeof cond === 'object' && !Array.isArray(cond) && !(cond instanceof Date) && !isObjectId(cond)) {
    const keys = Object.keys(cond);
    if (keys.length === 1 && keys[0] === '$eq' && isIndexableScalar((cond as Doc).$eq)) {
      return { ok: true, value: (cond as Doc).$eq };
    }
  }
  return { ok: false };
}

export interface Plan {
  /** Documents that may match (a superset of the matches), in natural order. */
  candidates: Iterable<Row>;
  /** Every candidate matches: the filter need not be evaluated again. */
  exact: boolean;
}

/** A row's ks column: the keys of each index (by ix) that has any for the row. */
type StoredKeys = Record<string, string[]>;

function parseKeys(ks: string | null): StoredKeys {
  return ks === null ? {} : (JSON.parse(ks) as StoredKeys);
}

function keysText(stored: StoredKeys): string | null {
  return Object.keys(stored).length > 0 ? JSON.stringify(stored) : null;
}

/** The remembered rows of keys in natural order, if every one is remembered (one that is not may still be stored). */
function allKnown(recent: Map<string, StoredRow>, keys: string[]): StoredRow[] | undefined {
  const hits = new Set<StoredRow>();
  for (const key of keys) {
    const row = recent.get(key);
    if (row === undefined) return undefined;
    hits.add(row);
  }
  return [...hits].sort((a, b) => a.r - b.r);
}

function* rows(iter: Iterable<unknown>): Generator<Row> {
  for (const row of iter as Iterable<{ r: number; doc: string }>) yield [row.r, decode(row.doc)];
}

export class CollectionData {
  readonly engine: CollectionHost;
  readonly name: string;
  readonly #table: string;
  readonly indexes = new Map<string, Index>();
  /** Whether the table exists (MongoDB lists a collection once it got a document or an index). */
  exists = false;

  constructor(engine: CollectionHost, name: string) {
    this.engine = engine;
    this.name = name;
    this.#table = quoteIdent(tableOf(name));
  }

  /** SQL texts with this table's name put in, kept so that the statement cache sees the same string. */
  readonly #texts = new Map<string, string>();

  #sql(text: string) {
    let sql = this.#texts.get(text);
    if (sql === undefined) this.#texts.set(text, (sql = text.replaceAll('$T', this.#table)));
    return this.engine.statement(sql);
  }

  /** Creates the table when a write first needs it (rolled back with the write's transaction). */
  ensure(): void {
    if (this.exists) return;
    this.engine.createTable(this.name);
    this.exists = true;
  }

  all(): Iterable<Row> {
    if (!this.exists) return [];
    return rows(this.#sql('SELECT r, doc FROM $T ORDER BY r').iterate());
  }

  count(): number {
    if (!this.exists) return 0;
    return (this.#sql('SELECT count(*) AS n FROM $T').get() as { n: number }).n;
  }

  /**
   * The rows this process read or wrote in its open write group, by canonical _id. While it holds the
   * write lock nobody else can change them, so a decision's update of a budget window does not read
   * again the row its find just read, and the next decisions of the group find every window here.
   * Stored texts, decoded afresh for each reader. Forgotten when the engine's rowEpoch moves on (the
   * group ends, a step of it is undone, the catalog changes), and bounded.
   */
  readonly #recent = new Map<string, StoredRow>();
  #recentEpoch = -1;

  #remembered(): Map<string, StoredRow> | undefined {
    const epoch = this.engine.rowEpoch;
    if (epoch === undefined) return undefined;
    if (epoch !== this.#recentEpoch || this.#recent.size >= RECENT_ROWS) {
      this.#recent.clear();
      this.#recentEpoch = epoch;
    }
    return this.#recent;
  }

  /**
   * The row of an _id. `forUpdate`: the caller will change the document and hand it to nobody (an update
   * that returns nothing), so the document the group's last update of the row left is taken as it is,
   * not decoded again (a budget window is updated by every decision of a group). Taken, not shared: a
   * failing update cannot leave a half-changed document behind, and replace() puts the next one back.
   */
  byId(id: unknown, forUpdate = false): Row | undefined {
    if (!this.exists) return undefined;
    const key = canonicalKey(id);
    const recent = this.#remembered();
    let row = recent?.get(key);
    if (row === undefined) {
      row = this.#sql('SELECT r, doc FROM $T WHERE id = ?').get(key) as StoredRow | undefined;
      if (row !== undefined) recent?.set(key, row);
    } else if (forUpdate && row.live !== undefined) {
      const live = row.live;
      row.live = undefined;
      return [row.r, live];
    }
    return row ? [row.r, decode(row.doc)] : undefined;
  }

  /** The rows of these canonical ids that exist, in natural order. */
  #byIds(keys: string[]): StoredRow[] {
    const recent = this.#remembered();
    const known = recent && allKnown(recent, keys);
    if (known) return known;
    // all(), not iterate(): as many rows as ids at most, and stepping an iterator from JavaScript
    // costs half as much again as the whole query (20 budget windows: 19.5 µs against 13.5).
    const found = this.#sql('SELECT r, id, doc FROM $T WHERE id IN (SELECT value FROM json_each(?)) ORDER BY r').all(JSON.stringify(keys)) as unknown as Array<StoredRow & { id: string }>;
    if (recent) for (const row of found) recent.set(row.id, { r: row.r, doc: row.doc });
    return found;
  }

  /** `forUpdate`: see byId. */
  plan(filter: Doc, forUpdate = false): Plan {
    const keys = Object.keys(filter);
    if (!this.exists) return { candidates: [], exact: true };
    if (keys.length === 0) return { candidates: this.all(), exact: true };
    if (Object.hasOwn(filter, '_id')) {
      const eq = equalityValue(filter._id);
      if (eq.ok) {
        const hit = this.byId(eq.value, forUpdate);
        return { candidates: hit ? [hit] : [], exact: keys.length === 1 };
      }
      const cond = filter._id;
      if (cond !== null && typeof cond === 'object' && !Array.isArray(cond)) {
        const inList = (cond as Doc).$in;
        if (Object.keys(cond).length === 1 && Array.isArray(inList) && inList.every(isIndexableScalar)) {
          const found = this.#byIds(inList.map(canonicalKey));
          return { candidates: found.map((row): Row => [row.r, decode(row.doc)]), exact: keys.length === 1 };
        }
      }
    }
    // The index whose leading fields the filter fixes by equality the most.
    let best: { index: Index; values: unknown[] } | undefined;
    for (const index of this.indexes.values()) {
      if (!index.servesFilter(filter)) continue;
      const values: unknown[] = [];
      for (const f of index.fields) {
        if (!Object.hasOwn(filter, f)) break;
        const eq = equalityValue(filter[f]);
        if (!eq.ok) break;
        values.push(eq.value);
      }
      if (values.length > (best?.values.length ?? 0)) best = { index, values };
    }
    if (!best) return this.#planIn(filter);
    const { index, values } = best;
    const prefix = values.map(keyPart).join('');
    const exact = keys.length === values.length;
    if (values.length === index.fields.length) {
      return {
        candidates: rows(this.#sql('SELECT r, doc FROM $T WHERE r IN (SELECT r FROM _sc_keys WHERE ix = ? AND k = ?) ORDER BY r').iterate(index.ix, prefix)),
        exact,
      };
    }
    // A key continues with the next field's length digits, all below ';'.
    return {
      candidates: rows(this.#sql('SELECT r, doc FROM $T WHERE r IN (SELECT r FROM _sc_keys WHERE ix = ? AND k >= ? AND k < ?) ORDER BY r').iterate(index.ix, prefix, prefix + ';')),
      exact,
    };
  }

  /**
   * `$in` on an index's leading field (decisions of a page of purchases, say): the rows of each value listed,
   * from the key table, rather than every row. A superset (the filter is matched after), in natural order.
   */
  #planIn(filter: Doc): Plan {
    for (const index of this.indexes.values()) {
      if (!index.complete) continue;
      const cond = filter[index.fields[0]];
      if (cond === null || typeof cond !== 'object' || Array.isArray(cond) || cond instanceof Date || Object.keys(cond).length !== 1) continue;
      const list = (cond as Doc).$in;
      if (!Array.isArray(list) || list.length === 0 || !list.every(isIndexableScalar)) continue;
      const prefixes = JSON.stringify(list.map(keyPart));
      return {
        candidates: rows(
          this.#sql("SELECT r, doc FROM $T WHERE r IN (SELECT s.r FROM _sc_keys s, json_each(?) j WHERE s.ix = ? AND s.k >= j.value AND s.k < j.value || ';') ORDER BY r").iterate(prefixes, index.ix),
        ),
        exact: false,
      };
    }
    return { candidates: this.all(), exact: false };
  }

  duplicateKeyError(indexName: string, keyPattern: Doc, doc: Doc): MongoServerError {
    const keyValue: Doc = {};
    for (const f of Object.keys(keyPattern)) keyValue[f] = readPath(doc, f).value;
    const shown = Object.entries(keyValue)
      .map(([k, v]) => `${k}: ${typeof v === 'string' ? JSON.stringify(v) : String(v)}`)
      .join(', ');
    const errmsg = `E11000 duplicate key error collection: ${this.engine.dbName}.${this.name} index: ${indexName} dup key: { ${shown} }`;
    // The driver's own class, so that `instanceof MongoServerError` and `code === 11000`
    // checks behave the same on both engines.
    return new MongoServerError({ message: errmsg, errmsg, code: 11000, codeName: 'DuplicateKey', keyPattern, keyValue });
  }

  /**
   * Writes the keys of row r, in one statement when there are few (each statement is a call into
   * SQLite: a decision's six documents have eleven keys). A failed statement is undone by SQLite, so
   * a duplicate is then looked for index by index, to name the index as MongoDB does.
   */
  #addKeys(r: number, doc: Doc, keys: Array<[Index, IndexKey[]]>): void {
    let rows = 0;
    for (const [, indexKeys] of keys) rows += indexKeys.length;
    if (rows === 0) return;
    if (rows <= KEY_ROWS_PER_STATEMENT) {
      const args: Array<number | string | null> = [];
      for (const [index, indexKeys] of keys) for (const key of indexKeys) args.push(index.ix, key.k, r, index.unique ? 1 : null, key.t);
      try {
        this.engine.statement(insertKeysSql(rows)).run(...args);
        return;
      } catch (error) {
        if (!isConstraintError(error)) throw error;
      }
    }
    const insert = this.engine.statement(insertKeysSql(1));
    for (const [index, indexKeys] of keys) {
      for (const key of indexKeys) {
        try {
          insert.run(index.ix, key.k, r, index.unique ? 1 : null, key.t);
        } catch (error) {
          if (isConstraintError(error)) throw this.duplicateKeyError(index.name, index.keyPattern, doc);
          throw error;
        }
      }
    }
  }

  #deleteKeys(ix: number, r: number, keys: Iterable<string>): void {
    const remove = this.engine.statement('DELETE FROM _sc_keys WHERE ix = ? AND k = ? AND r = ?');
    for (const k of keys) remove.run(ix, k, r);
  }

  /** Stores a new document (its _id set), as text when the caller encoded it already; the caller's transaction undoes it on error. */
  insert(doc: Doc, text = encode(doc)): void {
    this.ensure();
    const keys: Array<[Index, IndexKey[]]> = [];
    const stored: StoredKeys = {};
    for (const index of this.indexes.values()) {
      const indexKeys = index.keysOf(doc);
      if (indexKeys.length === 0) continue;
      keys.push([index, indexKeys]);
      stored[index.ix] = indexKeys.map((key) => key.k);
    }
    let r: number;
    try {
      r = Number(this.#sql('INSERT INTO $T (id, doc, ks) VALUES (?, ?, ?)').run(canonicalKey(doc._id), text, keysText(stored)).lastInsertRowid);
    } catch (error) {
      if (isConstraintError(error)) throw this.duplicateKeyError('_id_', { _id: 1 }, doc);
      throw error;
    }
    this.#addKeys(r, doc, keys);
  }

  /**
   * Replaces a stored document, moving its index keys only where they change. `touched`, when
   * known, holds the first segments of every path the update wrote: an index on none of them
   * keeps its keys without computing them. `owned`: nobody else holds next and it reads as its stored
   * text decoded would, so the row cache keeps it for the row's next update (byId).
   */
  replace(r: number, next: Doc, touched?: ReadonlySet<string>, owned = false): void {
    let stored: StoredKeys | undefined;
    let moved = false;
    for (const index of this.indexes.values()) {
      if (touched && !index.roots.some((root) => touched.has(root))) continue;
      stored ??= parseKeys((this.#sql('SELECT ks FROM $T WHERE r = ?').get(r) as { ks: string | null }).ks);
      const after = index.keysOf(next);
      // Left with the keys next no longer has. A key's t follows from its k (the first field's date).
      const gone = new Set(stored[index.ix]);
      const added = after.filter((key) => !gone.delete(key.k));
      if (added.length === 0 && gone.size === 0) continue;
      this.#deleteKeys(index.ix, r, gone);
      this.#addKeys(r, next, [[index, added]]);
      if (after.length > 0) stored[index.ix] = after.map((key) => key.k);
      else delete stored[index.ix];
      moved = true;
    }
    const text = encode(next);
    if (moved) this.#sql('UPDATE $T SET doc = ?, ks = ? WHERE r = ?').run(text, keysText(stored!), r);
    else this.#sql('UPDATE $T SET doc = ? WHERE r = ?').run(text, r);
    this.#remembered()?.set(canonicalKey(next._id), owned ? { r, doc: text, live: next } : { r, doc: text });
  }

  remove(r: number): void {
    this.#recent.clear();
    const row = this.#sql('DELETE FROM $T WHERE r = ? RETURNING ks').get(r) as { ks: string | null } | undefined;
    if (row === undefined) return;
    for (const [ix, keys] of Object.entries(parseKeys(row.ks))) this.#deleteKeys(Number(ix), r, keys);
  }

  /** Documents whose TTL date plus expireAfterSeconds is at or before now; returns how many. */
  expire(now: number): number {
    let removed = 0;
    for (const index of this.indexes.values()) {
      if (index.expireAfterSeconds === undefined || index.fields.length !== 1) continue;
      const limit = now - index.expireAfterSeconds * 1000;
      const due = this.engine.statement('SELECT DISTINCT r FROM _sc_keys WHERE ix = ? AND t IS NOT NULL AND t <= ?').all(index.ix, limit) as Array<{ r: number }>;
      for (const { r } of due) this.remove(r);
      removed += due.length;
    }
    return removed;
  }

  addIndex(keyPattern: Doc, options: IndexOptions): string {
    const index = new Index(0, keyPattern, options);
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
    this.ensure();
    const ix = this.engine.recordIndex(this.name, index.spec());
    const created = new Index(ix, keyPattern, options);
    // The ks column is rewritten once the scan is over: SQLite leaves undefined whether a
    // SELECT still running sees the rows changed under it.
    const pending: Array<[number, string | null]> = [];
    for (const row of this.#sql('SELECT r, doc, ks FROM $T ORDER BY r').iterate() as Iterable<{ r: number; doc: string; ks: string | null }>) {
      const doc = decode(row.doc);
      const keys = created.keysOf(doc);
      if (keys.length === 0) continue;
      this.#addKeys(row.r, doc, [[created, keys]]);
      const stored = parseKeys(row.ks);
      stored[ix] = keys.map((key) => key.k);
      pending.push([row.r, keysText(stored)]);
    }
    for (const [r, ks] of pending) this.#sql('UPDATE $T SET ks = ? WHERE r = ?').run(ks, r);
    this.indexes.set(created.name, created);
    return created.name;
  }
}
