// Updates done inside SQLite, on the stored text, with no document decoded or encoded in JavaScript:
// the shape every decision writes a dozen times (a budget window's version-checked $set, a fence's
// $inc, a counter's $inc). `{ _id: x, field: scalar, ... }` filters and `$set` / `$inc` of top-level
// fields that no index reads are turned into one json_set() over the row; anything else, and any
// row the SQL conditions leave out (a missing field, an array where a scalar was asked for, a
// number outside the exactly representable range), goes to the general path, which is the
// reference for semantics. The SQL conditions are strict, never loose: they may send a row to the
// general path that would have matched, never the other way round.
import { canonicalKey, isIndexableScalar, storedText, type Doc } from './values.ts';

/** Field names that need no quoting in a JSON path and cannot mean anything to MongoDB but a field. */
const PLAIN_FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_EXACT = Number.MAX_SAFE_INTEGER;

export interface InPlaceUpdate {
  /** SELECT r, doc, next FROM $T WHERE ...: the row and its updated text, when it matches. */
  sql: string;
  params: unknown[];
}

function path(field: string): string {
  return `'$."${field}"'`;
}

/**
 * The SQL for `update` applied to the one document `filter` names, or undefined when the shapes are
 * not the simple ones (or the update writes a field some index reads: its index keys would move).
 */
export function inPlaceUpdate(filter: Doc, update: unknown, indexed: (field: string) => boolean): InPlaceUpdate | undefined {
  if (update === null || typeof update !== 'object' || Array.isArray(update)) return undefined;
  const where: string[] = ['id = ?'];
  const whereParams: unknown[] = [];
  let id: unknown;
  let hasId = false;
  for (const [field, value] of Object.entries(filter)) {
    if (field === '_id') {
      if (value === null || !isIndexableScalar(value)) return undefined;
      id = value;
      hasId = true;
      continue;
    }
    if (!PLAIN_FIELD.test(field)) return undefined;
    const p = path(field);
    if (typeof value === 'string') {
      where.push(`json_type(doc, ${p}) = 'text' AND json_extract(doc, ${p}) = ?`);
      whereParams.push(value);
    } else if (typeof value === 'boolean') {
      where.push(`json_type(doc, ${p}) = '${value ? 'true' : 'false'}'`);
    } else if (Number.isSafeInteger(value)) {
      where.push(`json_type(doc, ${p}) = 'integer' AND json_extract(doc, ${p}) = CAST(? AS INTEGER)`);
      whereParams.push(value);
    } else {
      return undefined;
    }
  }
  if (!hasId) return undefined;

  const sets: string[] = [];
  const setParams: unknown[] = [];
  const seen = new Set<string>();
  for (const [op, fields] of Object.entries(update as Doc)) {
    if (op !== '$set' && op !== '$inc' && op !== '$setOnInsert') return undefined;
    if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) return undefined;
    const entries = Object.entries(fields as Doc);
    if (entries.length === 0) return undefined;
    for (const [field, value] of entries) {
      // A field named twice (say in $inc and $setOnInsert) is an error MongoDB reports: the general path does.
      if (field === '_id' || !PLAIN_FIELD.test(field) || seen.has(field)) return undefined;
      seen.add(field);
      if (op === '$setOnInsert') continue; // the document exists: nothing to insert
      if (indexed(field)) return undefined;
      const p = path(field);
      if (op === '$set') {
        // Values whose stored form is not themselves (NaN is stored as null) are left to the general path.
        if (typeof value === 'function' || typeof value === 'symbol') return undefined;
        if (typeof value === 'number' && !Number.isFinite(value)) return undefined;
        if (value instanceof Date && Number.isNaN(value.getTime())) return undefined;
        sets.push(`${p}, json(?)`);
        setParams.push(storedText(value));
      } else {
        if (!Number.isSafeInteger(value)) return undefined;
        // Integers only, and only where the sum is exact both here and in JavaScript.
        sets.push(`${p}, coalesce(json_extract(doc, ${p}), 0) + CAST(? AS INTEGER)`);
        setParams.push(value);
        where.push(
          `(json_type(doc, ${p}) IS NULL OR (json_type(doc, ${p}) = 'integer' AND json_extract(doc, ${p}) BETWEEN -${MAX_EXACT} AND ${MAX_EXACT}))`,
          `coalesce(json_extract(doc, ${p}), 0) + CAST(? AS INTEGER) BETWEEN -${MAX_EXACT} AND ${MAX_EXACT}`,
        );
        whereParams.push(value);
      }
    }
  }
  if (sets.length === 0) return undefined;
  return {
    sql: `SELECT r, doc, json_set(doc, ${sets.join(', ')}) AS next FROM $T WHERE ${where.join(' AND ')}`,
    params: [...setParams, canonicalKey(id), ...whereParams],
  };
}
