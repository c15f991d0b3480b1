// The embedded engine's Collection: the part of the driver's Collection API the project (and
// Agenda's MongoBackend) uses, with mingo supplying query, update and aggregation semantics.
// Every read decodes fresh documents from SQLite, so callers never share objects with storage.
import { MongoInvalidArgumentError, MongoServerError, ObjectId } from 'mongodb';
import { Query, update as mingoUpdate, updateOne as mingoUpdateOne } from 'mingo';
import { resolve } from 'mingo/util';
import { aggregatorOf, NO_SCRIPTS, queryOf } from './queries.ts';
import { writesAnywhere } from '../pipelines.ts';
import type { CollectionData, IndexOptions, Row } from './collection-data.ts';
import type { Engine } from './engine.ts';
import { equalityMatcher, fastUpdate, type Matcher } from './fast-paths.ts';
import { canonicalKey, cloneDocIn, cloneIn, cloneOut, encode, newObjectId, ownField, refuseNulKeys, type Doc } from './values.ts';

type SortDirection = 1 | -1;
type Options = Doc & { session?: unknown };

interface FindSpec {
  sort?: Doc;
  skip?: number;
  limit?: number;
  projection?: Doc;
}

function direction(v: unknown): SortDirection {
  if (v === -1 || v === 'desc' || v === 'descending') return -1;
  if (v === 1 || v === 'asc' || v === 'ascending') return 1;
  throw new MongoInvalidArgumentError(`Invalid sort direction: ${JSON.stringify(v)}`);
}

/** Accepts the driver's sort forms: {a: 1}, {a: 'desc'}, 'a', ['a', 1], [['a', 1], ['b', -1]], Map. */
export function normalizeSort(sort: unknown): Doc | undefined {
  if (sort === undefined || sort === null) return undefined;
  if (typeof sort === 'string') return { [sort]: 1 };
  if (sort instanceof Map) return normalizeSort([...sort.entries()]);
  if (Array.isArray(sort)) {
    if (sort.length === 0) return undefined;
    if (sort.length === 2 && typeof sort[0] === 'string' && !Array.isArray(sort[1]) && typeof sort[1] !== 'string') {
      return { [sort[0]]: direction(sort[1]) };
    }
    if (sort.length === 2 && typeof sort[0] === 'string' && ['asc', 'desc', 'ascending', 'descending'].includes(sort[1])) {
      return { [sort[0]]: direction(sort[1]) };
    }
    const out: Doc = {};
    for (const entry of sort) {
      if (typeof entry === 'string') out[entry] = 1;
      else out[entry[0]] = direction(entry[1]);
    }
    return out;
  }
  const out: Doc = {};
  for (const [k, v] of Object.entries(sort as Doc)) {
    out[k] = typeof v === 'object' && v !== null ? v : direction(v);
  }
  return Object.keys(out).length ? out : undefined;
}

function normalizeKeys(spec: unknown): Doc {
  if (typeof spec === 'string') return { [spec]: 1 };
  if (Array.isArray(spec)) {
    const out: Doc = {};
    for (const e of spec) {
      if (typeof e === 'string') out[e] = 1;
      else out[e[0]] = e[1];
    }
    return out;
  }
  if (spec instanceof Map) return Object.fromEntries(spec);
  return { ...(spec as Doc) };
}

function hasAtomicOperators(update: unknown): boolean {
  if (Array.isArray(update)) return true;
  const keys = Object.keys(update as Doc);
  return keys.length > 0 && keys[0].startsWith('$');
}

function isOperatorDoc(v: unknown): v is Doc {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || v instanceof Date) return false;
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return false;
  const keys = Object.keys(v);
  return keys.length > 0 && keys[0].startsWith('$');
}

/** The fields an upsert copies from its filter: the equality conditions (MongoDB's rule). */
function upsertBase(filter: Doc): Doc {
  const eqs: Doc = {};
  const collect = (f: Doc) => {
    for (const [k, v] of Object.entries(f)) {
      if (k === '$and' && Array.isArray(v)) {
        for (const sub of v) collect(sub as Doc);
      } else if (!k.startsWith('$')) {
        if (!isOperatorDoc(v)) eqs[k] = v;
        else if (Object.hasOwn(v, '$eq')) eqs[k] = v.$eq;
      }
    }
  };
  collect(filter);
  const { _id, ...rest } = cloneIn(eqs) as Doc;
  const base: Doc = Object.hasOwn(eqs, '_id') ? { _id } : {};
  if (Object.keys(rest).length) mingoUpdate(base, { $set: rest } as never, undefined, undefined, { cloneMode: 'none' });
  return base;
}

/** The first segments of the paths an operator update writes; undefined for a pipeline (any field). */
function touchedRoots(update: unknown): Set<string> | undefined {
  if (Array.isArray(update)) return undefined;
  const roots = new Set<string>();
  for (const [op, fields] of Object.entries(update as Doc)) {
    if (op === '$setOnInsert') continue; // applies only when inserting
    if (fields === null || typeof fields !== 'object') return undefined;
    for (const path of Object.keys(fields)) {
      roots.add(path.split('.')[0]);
      // $rename writes its target too.
      if (op === '$rename') {
        const to = (fields as Doc)[path];
        if (typeof to !== 'string') return undefined;
        roots.add(to.split('.')[0]);
      }
    }
  }
  return roots;
}

/**
 * Whether the fields under these roots read back from the stored text as they are: plain documents and
 * arrays of strings, finite numbers, booleans, null, valid dates and ObjectIds. The rest of a document
 * the store decoded reads back as it is; a value the stored form changes (NaN, an invalid date, a
 * bigint, a typed array, a Long, undefined...) would make the document kept differ from the one stored.
 */
function storedAsIs(doc: Doc, roots: ReadonlySet<string>): boolean {
  for (const root of roots) if (Object.hasOwn(doc, root) && !readsBack(doc[root])) return false;
  return true;
}

function readsBack(v: unknown): boolean {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v) && !Object.is(v, -0);
    case 'object':
      break;
    default:
      return false;
  }
  if (v === null) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!(i in v) || !readsBack(v[i])) return false;
    return true;
  }
  if (v instanceof Date) return !Number.isNaN(v.getTime());
  if (v instanceof ObjectId) return true;
  if (Object.getPrototypeOf(v) !== Object.prototype) return false;
  for (const k in v) if (!readsBack((v as Doc)[k])) return false;
  return true;
}

function usesPositional(update: Doc): boolean {
  for (const fields of Object.values(update)) {
    if (fields && typeof fields === 'object') {
      for (const path of Object.keys(fields)) if (path.includes('.$.') || path.endsWith('.$')) return true;
    }
  }
  return false;
}

/**
 * Applies an update (operators or pipeline) to doc, which the caller owns (a freshly decoded document,
 * not a copy of one: a copy was a quarter of the cost of updating a budget window). $setOnInsert applies
 * only when inserting. Returns the new document and whether anything changed.
 */
function applyUpdate(doc: Doc, update: unknown, filter: Doc, inserting: boolean, options: Options): { next: Doc; modified: boolean } {
  if (Array.isArray(update)) {
    const docs = [doc];
    const result = mingoUpdateOne(docs, {}, cloneIn(update) as never, { cloneMode: 'copy' }, NO_SCRIPTS);
    return { next: cloneDocIn(docs[0]), modified: result.modifiedCount > 0 };
  }
  if (!hasAtomicOperators(update)) throw new MongoInvalidArgumentError('Update document requires atomic operators');
  const { $setOnInsert, ...rest } = cloneIn(update) as Doc;
  const next = doc;
  const idKey = canonicalKey(doc._id);
  let modified = false;
  let onInsert = $setOnInsert as Doc | undefined;
  // mingo refuses every update of _id; MongoDB accepts one that sets it to its current value,
  // and sets it on insert from $set or $setOnInsert.
  for (const op of [...Object.keys(rest), '$setOnInsert']) {
    const fields = op === '$setOnInsert' ? onInsert : (rest[op] as Doc);
    if (!fields || typeof fields !== 'object' || !Object.hasOwn(fields, '_id')) continue;
    const { _id, ...others } = fields;
    if (op === '$set') {
      if (inserting) next._id = _id;
      else if (canonicalKey(_id) !== idKey) throw immutableId();
    } else if (op === '$setOnInsert') {
      if (inserting && !Object.hasOwn((rest.$set as Doc | undefined) ?? {}, '_id')) next._id = _id;
    } else {
      throw immutableId();
    }
    if (op === '$setOnInsert') onInsert = others;
    else rest[op] = others;
  }
  if (Object.keys(rest).length) {
    checkArithmetic(next, rest);
    const arrayFilters = options.arrayFilters as Doc[] | undefined;
    const fast = arrayFilters ? undefined : fastUpdate(next, rest);
    if (fast !== undefined) modified = fast;
    else {
      const fields = mingoUpdate(next, rest as never, arrayFilters, usesPositional(rest) ? filter : undefined, {
        cloneMode: 'copy',
      });
      modified = fields.length > 0;
    }
  }
  if (inserting && onInsert && Object.keys(onInsert).length) {
    if (fastUpdate(next, { $set: onInsert }) === undefined) {
      mingoUpdate(next, { $set: onInsert } as never, undefined, undefined, { cloneMode: 'copy' });
    }
    modified = true;
  }
  if (!inserting && canonicalKey(next._id) !== idKey) throw immutableId();
  return { next, modified };
}

const NUMERIC_BSON = new Set(['Long', 'Double', 'Int32', 'Decimal128']);

function isNumeric(v: unknown): boolean {
  if (typeof v === 'number' || typeof v === 'bigint') return true;
  return v !== null && typeof v === 'object' && NUMERIC_BSON.has((v as { _bsontype?: string })._bsontype ?? '');
}

/**
 * MongoDB's TypeMismatch (14) for $inc and $mul: a non-numeric argument, or a field that holds
 * something else than a number (null included); mingo would leave such a field as it is. Paths with
 * an array or a positional operator on the way are left to mingo.
 */
function checkArithmetic(doc: Doc, update: Doc): void {
  for (const op of ['$inc', '$mul'] as const) {
    const fields = update[op];
    if (fields === null || typeof fields !== 'object') continue;
    for (const [path, arg] of Object.entries(fields as Doc)) {
      const verb = op === '$inc' ? 'increment' : 'multiply';
      if (!isNumeric(arg)) throw typeMismatch(`Cannot ${verb} with non-numeric argument: {${path}: ${JSON.stringify(arg) ?? String(arg)}}`);
      const parts = path.split('.');
      let cur: unknown = doc;
      for (const part of parts.slice(0, -1)) {
        if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || part.startsWith('$')) {
          cur = undefined;
          break;
        }
        cur = ownField(cur as Doc, part);
      }
      if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) continue;
      const value = ownField(cur as Doc, parts[parts.length - 1]);
      if (value !== undefined && !isNumeric(value)) {
        throw typeMismatch(`Cannot apply ${op} to a value of non-numeric type. {_id: ${JSON.stringify(doc._id) ?? String(doc._id)}} has the field '${parts[parts.length - 1]}' of non-numeric type ${value === null ? 'null' : typeof value}`);
      }
    }
  }
}

function typeMismatch(message: string): MongoServerError {
  return new MongoServerError({ message, errmsg: message, code: 14, codeName: 'TypeMismatch' });
}

function matcherFor(filter: Doc): Matcher {
  let query: Query | undefined;
  const slow = (): Matcher => {
    query ??= queryOf(filter);
    const q = query;
    return (doc) => q.test(doc);
  };
  return equalityMatcher(filter, slow) ?? slow();
}

function immutableId(): MongoServerError {
  return new MongoServerError({
    message: "Performing an update on the path '_id' would modify the immutable field '_id'",
    code: 66,
    codeName: 'ImmutableField',
  });
}

function project(docs: Doc[], projection: Doc | undefined): Doc[] {
  if (!projection || Object.keys(projection).length === 0) return docs;
  return queryOf({}).find(docs, projection as never).all() as Doc[];
}

function positiveOrUndefined(n: unknown): number | undefined {
  return typeof n === 'number' && n !== 0 ? Math.abs(n) : undefined;
}

export class EmbeddedCollection {
  readonly #engine: Engine;
  readonly collectionName: string;

  constructor(engine: Engine, name: string) {
    this.#engine = engine;
    this.collectionName = name;
  }

  get dbName(): string {
    return this.#engine.dbName;
  }

  get namespace(): string {
    return `${this.#engine.dbName}.${this.collectionName}`;
  }

  get #data(): CollectionData {
    return this.#engine.data(this.collectionName);
  }

  /** Matching [r, doc] pairs in natural order, stopping after `max` when given; `forUpdate`: see CollectionData.byId. */
  #match(filter: Doc | undefined, max?: number, forUpdate = false): Row[] {
    const f = filter ?? {};
    const plan = this.#data.plan(f, forUpdate);
    const test = plan.exact ? undefined : matcherFor(f);
    const out: Row[] = [];
    for (const entry of plan.candidates) {
      if (test && !test(entry[1])) continue;
      out.push(entry);
      if (max !== undefined && out.length >= max) break;
    }
    return out;
  }

  /** The rows a find would return. */
  #select(filter: Doc | undefined, spec: FindSpec, forUpdate = false): Row[] {
    const sort = normalizeSort(spec.sort);
    const skip = positiveOrUndefined(spec.skip) ?? 0;
    const limit = positiveOrUndefined(spec.limit);
    if (!sort) {
      const found = this.#match(filter, limit === undefined ? undefined : skip + limit, forUpdate);
      return skip ? found.slice(skip) : found;
    }
    const found = this.#match(filter, undefined, forUpdate);
    const ids = new Map<Doc, number>();
    for (const [id, doc] of found) ids.set(doc, id);
    let cursor = new Query({}).find(found.map(([, d]) => d)).sort(sort as never);
    if (skip) cursor = cursor.skip(skip);
    if (limit !== undefined) cursor = cursor.limit(limit);
    return (cursor.all() as Doc[]).map((d) => [ids.get(d) as number, d]);
  }

  /** Used by the cursors. */
  async _find(filter: Doc | undefined, spec: FindSpec, session: unknown): Promise<Doc[]> {
    return this.#engine.read(session, () => project(this.#select(filter, spec).map(([, d]) => d), spec.projection));
  }

  async _aggregate(pipeline: Doc[], session: unknown): Promise<Doc[]> {
    return this.#engine.read(session, () => {
      if (writesAnywhere(pipeline)) throw new MongoInvalidArgumentError('the embedded engine does not support $out or $merge');
      let stages = pipeline;
      let input: Doc[];
      const first = pipeline[0];
      if (first && '$match' in first && Object.keys(first).length === 1) {
        input = this.#match(first.$match as Doc).map(([, d]) => d);
        stages = pipeline.slice(1);
      } else {
        input = Array.from(this.#data.all(), ([, d]) => d);
      }
      if (stages.length === 0) return input;
      const engine = this.#engine;
      const aggregator = aggregatorOf(stages, {
        collectionResolver: (name: string) => Array.from(engine.data(name).all(), ([, d]) => d),
      });
      return aggregator.run(input) as Doc[];
    });
  }

  find(filter: Doc = {}, options: Options = {}): EmbeddedFindCursor {
    return new EmbeddedFindCursor(this, filter, {
      // As the driver's formatSort, when the cursor is made: a bad sort is refused before anything is sent.
      sort: normalizeSort(options.sort),
      skip: options.skip as number | undefined,
      limit: options.limit as number | undefined,
      projection: options.projection as Doc | undefined,
    }, options.session);
  }

  async findOne(filter: Doc = {}, options: Options = {}): Promise<Doc | null> {
    const docs = await this._find(filter, {
      sort: normalizeSort(options.sort),
      skip: options.skip as number | undefined,
      limit: 1,
      projection: options.projection as Doc | undefined,
    }, options.session);
    return docs[0] ?? null;
  }

  aggregate(pipeline: Doc[] = [], options: Options = {}): EmbeddedAggregationCursor {
    return new EmbeddedAggregationCursor(this, pipeline, options.session);
  }

  async countDocuments(filter: Doc = {}, options: Options = {}): Promise<number> {
    return this.#engine.read(options.session, () => {
      const skip = positiveOrUndefined(options.skip) ?? 0;
      if (Object.keys(filter).length === 0 && options.limit === undefined) return Math.max(0, this.#data.count() - skip);
      const limit = positiveOrUndefined(options.limit);
      const n = this.#match(filter, limit === undefined ? undefined : skip + limit).length;
      return Math.max(0, n - skip);
    });
  }

  async estimatedDocumentCount(options: Options = {}): Promise<number> {
    return this.#engine.read(options.session, () => this.#data.count());
  }

  async distinct(key: string, filter: Doc = {}, options: Options = {}): Promise<unknown[]> {
    return this.#engine.read(options.session, () => {
      const seen = new Map<string, unknown>();
      for (const [, doc] of this.#match(filter)) {
        // MongoDB's distinct leaves out documents missing the field; an explicit null counts.
        const value = resolve(doc, key);
        if (value === undefined) continue;
        for (const v of Array.isArray(value) ? value : [value]) {
          const k = canonicalKey(v);
          if (!seen.has(k)) seen.set(k, v);
        }
      }
      return [...seen.values()];
    });
  }

  async insertOne(doc: Doc, options: Options = {}): Promise<{ acknowledged: true; insertedId: unknown }> {
    const inserted = incoming(doc);
    return this.#engine.write(options.session, () => {
      this.#data.insert(inserted.stored, inserted.text);
      return { acknowledged: true as const, insertedId: inserted.stored._id };
    });
  }

  async insertMany(docs: Doc[], options: Options = {}): Promise<{ acknowledged: true; insertedCount: number; insertedIds: Record<number, unknown> }> {
    const inserted = docs.map(incoming);
    return this.#engine.write(options.session, () => {
      const insertedIds: Record<number, unknown> = {};
      inserted.forEach(({ stored, text }, i) => {
        this.#data.insert(stored, text);
        insertedIds[i] = stored._id;
      });
      return { acknowledged: true as const, insertedCount: docs.length, insertedIds };
    });
  }

  /**
   * Stores an upsert's new document, with a generated ObjectId when it has no _id (put first, as MongoDB
   * does). Not incoming(): that is the driver's rule for inserts, which replaces a null _id, while the
   * server keeps the null an upsert's filter gave ({_id: null}).
   */
  #insert(doc: Doc): Doc {
    const stored = Object.hasOwn(doc, '_id') ? { _id: doc._id, ...doc } : { _id: newObjectId(), ...doc };
    this.#data.insert(stored);
    return stored;
  }

  #update(filter: Doc, update: unknown, options: Options, many: boolean): UpdateResult {
    const data = this.#data;
    // The documents are changed here and handed to nobody: the row cache's own may be taken (byId).
    const found = many ? this.#match(filter, undefined, true) : this.#select(filter, { sort: options.sort as Doc | undefined, limit: 1 }, true);
    if (found.length === 0) {
      if (!options.upsert) return updateResult(0, 0);
      const { next } = applyUpdate(upsertBase(filter), update, filter, true, options);
      const stored = this.#insert(next);
      return updateResult(0, 0, { _id: stored._id });
    }
    let modified = 0;
    const touched = touchedRoots(update);
    for (const [id, doc] of found) {
      const { next, modified: changed } = applyUpdate(doc, update, filter, false, options);
      if (!changed) continue;
      data.replace(id, next, touched, touched !== undefined && storedAsIs(next, touched));
      modified++;
    }
    return updateResult(found.length, modified);
  }

  async updateOne(filter: Doc, update: unknown, options: Options = {}): Promise<UpdateResult> {
    checkUpdate(filter, update, options);
    normalizeSort(options.sort); // as the driver's formatSort, before anything is sent: a transaction goes on
    return this.#engine.write(options.session, () => this.#update(filter, update, options, false));
  }

  async updateMany(filter: Doc, update: unknown, options: Options = {}): Promise<UpdateResult> {
    checkUpdate(filter, update, options);
    return this.#engine.write(options.session, () => this.#update(filter, update, options, true));
  }

  async replaceOne(filter: Doc, replacement: Doc, options: Options = {}): Promise<UpdateResult> {
    checkReplacement(filter, replacement, options);
    normalizeSort(options.sort); // as the driver's formatSort, before anything is sent: a transaction goes on
    return this.#engine.write(options.session, () => this.#replaceOne(filter, replacement, options));
  }

  #replaceOne(filter: Doc, replacement: Doc, options: Options): UpdateResult {
    {
      const data = this.#data;
      const [hit] = this.#select(filter, { sort: options.sort as Doc | undefined, limit: 1 });
      if (!hit) {
        if (!options.upsert) return updateResult(0, 0);
        const doc = cloneDocIn(replacement);
        const base = upsertBase(filter);
        if (!Object.hasOwn(doc, '_id') && Object.hasOwn(base, '_id')) doc._id = base._id;
        const stored = this.#insert(doc);
        return updateResult(0, 0, { _id: stored._id });
      }
      const [id, prev] = hit;
      const next = replacementFor(prev, replacement);
      const changed = canonicalKey(next) !== canonicalKey(prev);
      if (changed) data.replace(id, next);
      return updateResult(1, changed ? 1 : 0);
    }
  }

  async findOneAndUpdate(filter: Doc, update: unknown, options: Options = {}): Promise<unknown> {
    checkUpdate(filter, update, options);
    normalizeSort(options.sort); // as the driver's formatSort, before anything is sent: a transaction goes on
    return this.#engine.write(options.session, () => {
      const data = this.#data;
      const after = returnsAfter(options);
      const [hit] = this.#select(filter, { sort: options.sort as Doc | undefined, limit: 1 });
      if (!hit) {
        if (!options.upsert) return findAndModifyResult(options, null, { n: 0, updatedExisting: false });
        const { next } = applyUpdate(upsertBase(filter), update, filter, true, options);
        const stored = this.#insert(next);
        const value = after ? this.#output(stored, options) : null;
        return findAndModifyResult(options, value, { n: 1, updatedExisting: false, upserted: stored._id });
      }
      const [id, prev] = hit;
      const { next, modified } = applyUpdate(after ? prev : cloneOut(prev), update, filter, false, options);
      if (modified) data.replace(id, next, touchedRoots(update));
      const value = this.#output(after ? next : prev, options);
      return findAndModifyResult(options, value, { n: 1, updatedExisting: true });
    });
  }

  async findOneAndReplace(filter: Doc, replacement: Doc, options: Options = {}): Promise<unknown> {
    checkReplacement(filter, replacement, options);
    normalizeSort(options.sort); // as the driver's formatSort, before anything is sent: a transaction goes on
    return this.#engine.write(options.session, () => {
      const data = this.#data;
      const after = returnsAfter(options);
      const [hit] = this.#select(filter, { sort: options.sort as Doc | undefined, limit: 1 });
      if (!hit) {
        if (!options.upsert) return findAndModifyResult(options, null, { n: 0, updatedExisting: false });
        const doc = cloneDocIn(replacement);
        const base = upsertBase(filter);
        if (!Object.hasOwn(doc, '_id') && Object.hasOwn(base, '_id')) doc._id = base._id;
        const stored = this.#insert(doc);
        const value = after ? this.#output(stored, options) : null;
        return findAndModifyResult(options, value, { n: 1, updatedExisting: false, upserted: stored._id });
      }
      const [id, prev] = hit;
      const next = replacementFor(prev, replacement);
      data.replace(id, next);
      return findAndModifyResult(options, this.#output(after ? next : prev, options), { n: 1, updatedExisting: true });
    });
  }

  async findOneAndDelete(filter: Doc, options: Options = {}): Promise<unknown> {
    normalizeSort(options.sort); // as the driver's formatSort, before anything is sent: a transaction goes on
    return this.#engine.write(options.session, () => {
      const [hit] = this.#select(filter, { sort: options.sort as Doc | undefined, limit: 1 });
      if (!hit) return findAndModifyResult(options, null, { n: 0 });
      this.#data.remove(hit[0]);
      return findAndModifyResult(options, this.#output(hit[1], options), { n: 1 });
    });
  }

  #output(doc: Doc, options: Options): Doc {
    return project([doc], options.projection as Doc | undefined)[0];
  }

  #delete(filter: Doc, options: Options, many: boolean): { acknowledged: true; deletedCount: number } {
    const found = many ? this.#match(filter) : this.#select(filter, { sort: options.sort as Doc | undefined, limit: 1 });
    for (const [id] of found) this.#data.remove(id);
    return { acknowledged: true as const, deletedCount: found.length };
  }

  async deleteOne(filter: Doc = {}, options: Options = {}): Promise<{ acknowledged: true; deletedCount: number }> {
    return this.#engine.write(options.session, () => this.#delete(filter, options, false));
  }

  async deleteMany(filter: Doc = {}, options: Options = {}): Promise<{ acknowledged: true; deletedCount: number }> {
    return this.#engine.write(options.session, () => this.#delete(filter, options, true));
  }

  /**
   * Ordered, as the driver's default: the operations run in order in one SQLite transaction (one
   * commit for the lot); the first failing one stops the rest, and those before it stay written,
   * as on MongoDB. Its error is thrown as is (a duplicate key is code 11000).
   */
  async bulkWrite(operations: Doc[], options: Options = {}): Promise<Doc> {
    const totals = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, deletedCount: 0, upsertedCount: 0 };
    const insertedIds: Record<number, unknown> = {};
    const upsertedIds: Record<number, unknown> = {};
    const steps = operations.map((op) => {
      const entries = Object.entries(op);
      if (entries.length !== 1) throw new MongoInvalidArgumentError('bulkWrite: each operation names exactly one kind');
      const [kind, raw] = entries[0] as [string, Doc];
      return writeStep(kind, raw);
    });
    const failure = await this.#engine.write(options.session, () => {
      for (const [i, step] of steps.entries()) {
        let outcome: StepOutcome;
        try {
          outcome = this.#engine.atomic(() => this._step(step));
        } catch (error) {
          return error;
        }
        if ('insertedId' in outcome) {
          insertedIds[i] = outcome.insertedId;
          totals.insertedCount++;
        } else if ('deletedCount' in outcome) {
          totals.deletedCount += outcome.deletedCount;
        } else {
          totals.matchedCount += outcome.matchedCount;
          totals.modifiedCount += outcome.modifiedCount;
          totals.upsertedCount += outcome.upsertedCount;
          if (outcome.upsertedCount > 0) upsertedIds[i] = outcome.upsertedId;
        }
      }
      return undefined;
    });
    if (failure !== undefined) throw failure;
    return { ok: 1, ...totals, insertedIds, upsertedIds };
  }

  /**
   * One write of a bulk write, synchronously, inside the caller's `Engine.write`: the collection's
   * bulkWrite and the client-level bulkWrite (client-bulk-write.ts) run their models through it.
   */
  _step(step: WriteStep): StepOutcome {
    switch (step.kind) {
      case 'insertOne':
        this.#data.insert(step.document.stored, step.document.text);
        return { insertedId: step.document.stored._id };
      case 'deleteOne':
      case 'deleteMany':
        return this.#delete(step.filter, step.options, step.kind === 'deleteMany');
      case 'replaceOne':
        return this.#replaceOne(step.filter, step.replacement, step.options);
      default:
        return this.#update(step.filter, step.update, step.options, step.kind === 'updateMany');
    }
  }

  async createIndex(spec: unknown, options: IndexOptions & { session?: unknown } = {}): Promise<string> {
    const { session: _ignored, ...indexOptions } = options;
    return this.#engine.write(undefined, () => this.#data.addIndex(normalizeKeys(spec), indexOptions));
  }

  async createIndexes(specs: Array<{ key: unknown } & IndexOptions>): Promise<string[]> {
    const names: string[] = [];
    for (const { key, ...options } of specs) names.push(await this.createIndex(key, options));
    return names;
  }

  /** MongoDB's dropIndexes of one index by name, or of every index but _id_ with '*'; its reply and its errors. */
  async dropIndex(name: string, _options: { session?: unknown } = {}): Promise<Doc> {
    const fail = (code: number, codeName: string, message: string) => new MongoServerError({ message, errmsg: message, code, codeName });
    return this.#engine.write(undefined, () => {
      const data = this.#data;
      if (!data.exists) throw fail(26, 'NamespaceNotFound', `ns not found ${this.#engine.dbName}.${this.collectionName}`);
      const nIndexesWas = data.indexes.size + 1;
      if (name === '*') {
        for (const each of [...data.indexes.keys()]) this.#engine.dropIndex(this.collectionName, each);
        return { nIndexesWas, msg: 'non-_id indexes dropped for collection', ok: 1 };
      }
      if (name === '_id_') throw fail(72, 'InvalidOptions', 'cannot drop _id index');
      if (!data.indexes.has(name)) throw fail(27, 'IndexNotFound', `index not found with name [${name}]`);
      this.#engine.dropIndex(this.collectionName, name);
      return { nIndexesWas, ok: 1 };
    });
  }

  async indexes(): Promise<Doc[]> {
    return this.#engine.read(undefined, () => {
      const out: Doc[] = [{ v: 2, key: { _id: 1 }, name: '_id_' }];
      for (const index of this.#data.indexes.values()) {
        const info: Doc = { v: 2, key: { ...index.keyPattern }, name: index.name };
        if (index.unique) info.unique = true;
        if (index.sparse) info.sparse = true;
        if (index.expireAfterSeconds !== undefined) info.expireAfterSeconds = index.expireAfterSeconds;
        if (index.partialFilterExpression) info.partialFilterExpression = cloneOut(index.partialFilterExpression);
        out.push(info);
      }
      return out;
    });
  }

  listIndexes(): { toArray(): Promise<Doc[]> } {
    return { toArray: () => this.indexes() };
  }

  async drop(): Promise<boolean> {
    return this.#engine.write(undefined, () => this.#engine.dropCollection(this.collectionName));
  }
}

/**
 * The driver's rule for a document to insert (maybeAddIdToDocuments): one whose _id is missing,
 * undefined or null gets an ObjectId, on the caller's object, before anything is sent.
 */
function withId(doc: Doc): Doc {
  if (doc._id === undefined || doc._id === null) doc._id = newObjectId();
  return doc;
}

/** A document on its way in: as stored (its _id first, as MongoDB keeps it) and its stored text. */
interface Incoming {
  stored: Doc;
  text: string;
}

/**
 * Made before anything is written, as the driver serialises a document before it sends it: a NUL
 * character in a key is refused here (encode), and a transaction goes on. It is also the only time
 * the document is encoded.
 */
function incoming(doc: Doc): Incoming {
  withId(doc);
  const stored = { _id: doc._id, ...doc };
  return { stored, text: encode(stored) };
}

function replacementFor(prev: Doc, replacement: Doc): Doc {
  const body = cloneDocIn(replacement);
  if (Object.hasOwn(body, '_id') && canonicalKey(body._id) !== canonicalKey(prev._id)) {
    throw new MongoServerError({
      message: "After applying the update, the (immutable) field '_id' was found to have been altered",
      code: 66,
      codeName: 'ImmutableField',
    });
  }
  delete body._id;
  return { _id: prev._id, ...body };
}

/** A write of a bulk write, checked as the driver checks it before sending anything. */
export type WriteStep =
  | { kind: 'insertOne'; document: Incoming }
  | { kind: 'deleteOne' | 'deleteMany'; filter: Doc; options: Options }
  | { kind: 'updateOne' | 'updateMany'; filter: Doc; update: unknown; options: Options }
  | { kind: 'replaceOne'; filter: Doc; replacement: Doc; options: Options };

export type StepOutcome = { insertedId: unknown } | { deletedCount: number } | UpdateResult;

/** A bulk write's operation (`{ kind: { filter, update, ... } }` in the collection-level form). */
export function writeStep(kind: string, raw: Doc): WriteStep {
  switch (kind) {
    case 'insertOne':
      return { kind, document: incoming(raw.document as Doc) };
    case 'deleteOne':
    case 'deleteMany':
      return { kind, filter: raw.filter as Doc, options: raw };
    case 'updateOne':
    case 'updateMany':
      checkUpdate(raw.filter, raw.update, raw);
      return { kind, filter: raw.filter as Doc, update: raw.update, options: raw };
    case 'replaceOne':
      checkReplacement(raw.filter, raw.replacement, raw);
      return { kind, filter: raw.filter as Doc, replacement: raw.replacement as Doc, options: raw };
    default:
      throw new MongoInvalidArgumentError(`bulkWrite: unsupported operation ${kind}`);
  }
}

/**
 * As the driver checks an update before anything is sent (so a transaction goes on): its form, and no
 * NUL in a key (BSON), in the update or in the filter of an upsert.
 */
function checkUpdate(filter: unknown, update: unknown, options: Options): void {
  if (update === null || typeof update !== 'object') throw new MongoInvalidArgumentError('Update document must be an object');
  if (!hasAtomicOperators(update)) throw new MongoInvalidArgumentError('Update document requires atomic operators');
  refuseNulKeys(update);
  checkUpsertFilter(filter, options);
}

/** An upsert's filter becomes part of the document it inserts: no NUL in a key, as for a document. */
function checkUpsertFilter(filter: unknown, options: Options): void {
  if (options.upsert === true) refuseNulKeys(filter);
}

/** As checkUpdate, for a replacement document. */
function checkReplacement(filter: unknown, replacement: unknown, options: Options): void {
  if (replacement === null || typeof replacement !== 'object' || Array.isArray(replacement)) {
    throw new MongoInvalidArgumentError('Replacement document must be an object');
  }
  if (hasAtomicOperators(replacement)) throw new MongoInvalidArgumentError('Replacement document must not contain atomic operators');
  refuseNulKeys(replacement);
  checkUpsertFilter(filter, options);
}

function returnsAfter(options: Options): boolean {
  if (options.returnDocument !== undefined) return options.returnDocument === 'after';
  return options.returnOriginal === false;
}

function findAndModifyResult(options: Options, value: Doc | null, lastErrorObject: Doc): unknown {
  if (options.includeResultMetadata === true) return { ok: 1, value, lastErrorObject };
  return value;
}

export interface UpdateResult {
  acknowledged: true;
  matchedCount: number;
  modifiedCount: number;
  upsertedCount: number;
  upsertedId: unknown;
}

/** The driver's UpdateResult, with the document upserted if any (its _id may be null: an upsert's filter can say so). */
function updateResult(matchedCount: number, modifiedCount: number, upserted?: { _id: unknown }): UpdateResult {
  return {
    acknowledged: true,
    matchedCount,
    modifiedCount,
    upsertedCount: upserted ? 1 : 0,
    upsertedId: upserted ? upserted._id : null,
  };
}

abstract class BufferedCursor {
  #buffer: Doc[] | undefined;
  #position = 0;
  #closed = false;
  readonly #maps: Array<(doc: Doc) => unknown> = [];

  protected abstract load(): Promise<Doc[]>;

  map(fn: (doc: Doc) => unknown): this {
    this.#maps.push(fn);
    return this;
  }

  batchSize(_n: number): this {
    return this;
  }

  async #fill(): Promise<Doc[]> {
    if (!this.#buffer) {
      let docs: unknown[] = await this.load();
      for (const fn of this.#maps) docs = docs.map((d) => fn(d as Doc));
      this.#buffer = docs as Doc[];
    }
    return this.#buffer;
  }

  async toArray(): Promise<Doc[]> {
    const docs = await this.#fill();
    const rest = docs.slice(this.#position);
    this.#position = docs.length;
    return rest;
  }

  async hasNext(): Promise<boolean> {
    if (this.#closed) return false;
    return this.#position < (await this.#fill()).length;
  }

  async next(): Promise<Doc | null> {
    if (this.#closed) return null;
    const docs = await this.#fill();
    return this.#position < docs.length ? docs[this.#position++] : null;
  }

  async tryNext(): Promise<Doc | null> {
    return this.next();
  }

  async forEach(fn: (doc: Doc) => boolean | void): Promise<void> {
    for await (const doc of this) if (fn(doc) === false) break;
  }

  rewind(): void {
    this.#buffer = undefined;
    this.#position = 0;
    this.#closed = false;
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  get closed(): boolean {
    return this.#closed;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Doc, void, void> {
    for (;;) {
      const doc = await this.next();
      if (doc === null) return;
      yield doc;
    }
  }
}

export class EmbeddedFindCursor extends BufferedCursor {
  readonly #collection: EmbeddedCollection;
  readonly #filter: Doc;
  readonly #spec: FindSpec;
  readonly #session: unknown;

  constructor(collection: EmbeddedCollection, filter: Doc, spec: FindSpec, session: unknown) {
    super();
    this.#collection = collection;
    this.#filter = filter;
    this.#spec = spec;
    this.#session = session;
  }

  protected load(): Promise<Doc[]> {
    return this.#collection._find(this.#filter, this.#spec, this.#session);
  }

  sort(sort: unknown, dir?: unknown): this {
    this.#spec.sort = normalizeSort(dir === undefined ? sort : [[sort, dir]]);
    return this;
  }

  skip(n: number): this {
    this.#spec.skip = n;
    return this;
  }

  limit(n: number): this {
    this.#spec.limit = n;
    return this;
  }

  project(projection: Doc): this {
    this.#spec.projection = projection;
    return this;
  }

  async count(): Promise<number> {
    return (await this.#collection._find(this.#filter, { ...this.#spec, projection: undefined }, this.#session)).length;
  }
}

export class EmbeddedAggregationCursor extends BufferedCursor {
  readonly #collection: EmbeddedCollection;
  readonly #pipeline: Doc[];
  readonly #session: unknown;

  constructor(collection: EmbeddedCollection, pipeline: Doc[], session: unknown) {
    super();
    this.#collection = collection;
    this.#pipeline = [...pipeline];
    this.#session = session;
  }

  protected load(): Promise<Doc[]> {
    return this.#collection._aggregate(this.#pipeline, this.#session);
  }
}
