// mingo Query and Aggregator objects for MongoDB filters and pipelines, with what mingo lacks of
// MongoDB's query language filled in: $type knows JSON's types and dates, but not ObjectId, so
// { _id: { $type: 'objectId' } } (or 7) matched nothing, where mongosh users and Agenda's documents
// have ObjectIds. A filter's $type is answered by $bsonType, which adds ObjectId to mingo's own $type.
// Left to mingo's $type: the conditions of an update's arrayFilters and $pull.
import { Aggregator } from 'mingo/aggregator';
import { Context } from 'mingo/core';
import { Query } from 'mingo/query';
import * as accumulatorOps from 'mingo/operators/accumulator';
import * as expressionOps from 'mingo/operators/expression';
import * as pipelineOps from 'mingo/operators/pipeline';
import * as projectionOps from 'mingo/operators/projection';
import * as queryOps from 'mingo/operators/query';
import * as windowOps from 'mingo/operators/window';
import { $type as mingoType } from 'mingo/operators/query/element';
import { $in as mingoIn, $nin as mingoNin } from 'mingo/operators/query/comparison';
import { Lazy, type Iterator } from 'mingo/lazy';
import { resolve } from 'mingo/util';
import type { Options } from 'mingo/types';
import { isObjectId, isPlain, type Doc } from './values.ts';

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

/**
 * $in over a list of strings alone, as a Set: mingo hashes every value of the list for every document it
 * tests, so a list of thousands (the webhook sweep's endpoints to skip) made each document cost thousands
 * of hashes. A field matches when it is one of the strings or an array holding one (a path through an
 * array of documents gives the array of their values); a missing field, a null or any other type cannot
 * equal a string. Lists with anything else (null, numbers, regular expressions, documents) stay mingo's.
 */
const SET_FROM = 8;
const stringList = (value: unknown): value is string[] => Array.isArray(value) && value.length >= SET_FROM && value.every((v) => typeof v === 'string');
function inStrings(selector: string, list: string[]): (doc: Doc) => boolean {
  const strings = new Set(list);
  return (doc) => {
    const value = resolve(doc, selector, { unwrapArray: true });
    if (typeof value === 'string') return strings.has(value);
    return Array.isArray(value) && value.some((v) => typeof v === 'string' && strings.has(v));
  };
}
const $in = (selector: string, value: unknown, options: Options) => (stringList(value) ? inStrings(selector, value) : mingoIn(selector, value, options));
const $nin = (selector: string, value: unknown, options: Options) => {
  if (!stringList(value)) return mingoNin(selector, value, options);
  const isIn = inStrings(selector, value);
  return (doc: Doc) => !isIn(doc);
};

/**
 * $sample as MongoDB answers it: at most `size` distinct documents, none of them twice, and none from an
 * empty collection. mingo's draws with replacement, so it repeated documents and gave `[undefined]` for
 * an empty collection (which the wire listener could not send). A size that is not a number, or is
 * negative, is refused as mongod refuses it.
 */
function $sample(coll: Iterator, expr: { size?: unknown }): Iterator {
  const size = expr?.size;
  if (typeof size !== 'number' || Number.isNaN(size)) throw new Error('size argument to $sample must be a number');
  if (size < 0) throw new Error('size argument to $sample must not be negative');
  return coll.transform((xs: unknown[]) => {
    const picked = xs.slice();
    const n = Math.min(Math.floor(size), picked.length);
    // The first n places of a Fisher-Yates shuffle.
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(Math.random() * (picked.length - i));
      [picked[i], picked[j]] = [picked[j], picked[i]];
    }
    return Lazy(picked.slice(0, n));
  });
}

// All of mingo's operators, with ours in place of its own: mingo's Query and Aggregator from 'mingo' merge a
// context given to them under their defaults, where an operator of the same name (here $in) stays mingo's.
const context = Context.init({
  accumulator: accumulatorOps,
  expression: expressionOps,
  pipeline: { ...pipelineOps, $sample },
  projection: projectionOps,
  window: windowOps,
  query: { ...queryOps, $bsonType, $in, $nin },
} as never);

/**
 * The filter (or a field's operator document) with its query operator $type renamed $bsonType, where
 * an operator can stand: in a field's operator document, under $and, $or, $nor, $not and $elemMatch.
 * Not in values ({ meta: { $eq: { $type: 'x' } } } compares with a document that has a field named
 * $type), nor in $expr, where $type is the aggregation expression that names a value's type.
 */
function withBsonType(filter: Doc): Doc {
  let out: Doc | undefined;
  for (const [key, value] of Object.entries(filter)) {
    let name = key;
    let next = value;
    if (key === '$type') name = '$bsonType';
    else if (key === '$and' || key === '$or' || key === '$nor') next = Array.isArray(value) ? value.map((f) => (isPlain(f) ? withBsonType(f) : f)) : value;
    else if (key === '$not' || key === '$elemMatch') next = isPlain(value) ? withBsonType(value) : value;
    // A field: its condition is an operator document when its first key is an operator.
    else if (!key.startsWith('$') && isPlain(value) && Object.keys(value)[0]?.startsWith('$')) next = withBsonType(value);
    if (out === undefined && (name !== key || next !== value)) out = { ...filter };
    if (out !== undefined) {
      if (name !== key) delete out[key];
      out[name] = next;
    }
  }
  return out ?? filter;
}

/** A pipeline's stages with withBsonType applied to their filters, nested pipelines included. */
function pipelineWithBsonType(pipeline: Doc[]): Doc[] {
  return pipeline.map((stage) => {
    if (isPlain(stage.$match)) return { ...stage, $match: withBsonType(stage.$match) };
    if (isPlain(stage.$facet)) {
      const facets = Object.fromEntries(Object.entries(stage.$facet).map(([name, p]) => [name, Array.isArray(p) ? pipelineWithBsonType(p) : p]));
      return { ...stage, $facet: facets };
    }
    for (const op of ['$lookup', '$unionWith']) {
      const spec = stage[op];
      if (isPlain(spec) && Array.isArray(spec.pipeline)) return { ...stage, [op]: { ...spec, pipeline: pipelineWithBsonType(spec.pipeline) } };
    }
    return stage;
  });
}

/**
 * No server-side JavaScript ($where, $function, $accumulator), as docs/operate/wire-protocol.md says:
 * mingo allows it by default, and would call whatever function a field path led to.
 */
export const NO_SCRIPTS = { scriptEnabled: false } as const;

export function queryOf(filter: Doc): Query {
  return new Query(withBsonType(filter), { context, ...NO_SCRIPTS });
}

export function aggregatorOf(pipeline: Doc[], options: { collectionResolver: (name: string) => Doc[] }): Aggregator {
  return new Aggregator(pipelineWithBsonType(pipeline), { ...options, context, ...NO_SCRIPTS });
}
