// mingo Query and Aggregator objects for MongoDB filters and pipelines, with what mingo lacks of
// MongoDB's query language filled in: $type knows JSON's types and dates, but not ObjectId, so
// { _id: { $type: 'objectId' } } (or 7) matched nothing, where mongosh users and Agenda's documents
// have ObjectIds. A filter's $type is answered by $bsonType, which adds ObjectId to mingo's own $type.
import { Aggregator, Context, Query } from 'mingo';
import { $type as mingoType } from 'mingo/operators/query/element';
import { resolve } from 'mingo/util';
import type { Options } from 'mingo/types';
import { isObjectId, type Doc } from './values.ts';

const OBJECT_ID_TYPES = new Set<unknown>(['objectId', 7]);

function holdsObjectId(value: unknown): boolean {
  return isObjectId(value) || (Array.isArray(value) && value.some(isObjectId));
}

const $bsonType = (selector: string, value: unknown, options: Options) => {
  const types = Array.isArray(value) ? value : [value];
  const others = types.filter((t) => !OBJECT_ID_TYPES.has(t));
  const mingos = others.length > 0 ? mingoType(selector, others.length === 1 ? others[0] : others, options) : () => false;
  if (others.length === types.length) return mingos;
  return (doc: Doc) => mingos(doc) || holdsObjectId(resolve(doc, selector, { unwrapArray: true }));
};

const context = Context.init().addQueryOps({ $bsonType } as never);

/**
 * The filter with every query operator $type renamed $bsonType. Not inside $expr, where $type is the
 * aggregation expression that names a value's type.
 */
function withBsonType(filter: unknown): unknown {
  if (Array.isArray(filter)) return filter.map(withBsonType);
  if (filter === null || typeof filter !== 'object' || Object.getPrototypeOf(filter) !== Object.prototype) return filter;
  let out: Doc | undefined;
  for (const [key, value] of Object.entries(filter)) {
    const name = key === '$type' ? '$bsonType' : key;
    const next = key === '$expr' ? value : withBsonType(value);
    if (out === undefined && (name !== key || next !== value)) out = { ...(filter as Doc) };
    if (out !== undefined) {
      if (name !== key) delete out[key];
      out[name] = next;
    }
  }
  return out ?? filter;
}

export function queryOf(filter: Doc): Query {
  return new Query(withBsonType(filter) as Doc, { context });
}

export function aggregatorOf(pipeline: Doc[], options: { collectionResolver: (name: string) => Doc[] }): Aggregator {
  const stages = pipeline.map((stage) => (Object.hasOwn(stage, '$match') ? { ...stage, $match: withBsonType(stage.$match) } : stage));
  return new Aggregator(stages, { ...options, context });
}
