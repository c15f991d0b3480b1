// Fast paths for the shapes of filter and update the service runs on every request: equality
// filters on scalars, and the common update operators on plain dotted paths. Anything else
// (or any doubt, such as an array on the path) is left to mingo, which is the reference for
// semantics; these must agree with it wherever they answer.
import { compare } from 'mingo/util';
import { canonicalKey, isIndexableScalar, type Doc } from './values.ts';

export type Matcher = (doc: Doc) => boolean;

/**
 * A matcher for filters made only of top-level equalities on non-null scalars; it defers to
 * `slow` for a document whose field holds an array or a document (MongoDB's array semantics).
 */
export function equalityMatcher(filter: Doc, slow: () => Matcher): Matcher | undefined {
  const entries: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(filter)) {
    if (k.startsWith('$') || k.includes('.') || v === null || !isIndexableScalar(v)) return undefined;
    entries.push([k, canonicalKey(v)]);
  }
  return (doc) => {
    for (const [k, want] of entries) {
      const have = doc[k];
      if (have !== null && typeof have === 'object' && !(have instanceof Date) && !('_bsontype' in have)) return slow()(doc);
      if (canonicalKey(have) !== want) return false;
    }
    return true;
  };
}

const FAST_OPS = new Set(['$set', '$unset', '$inc', '$min', '$max', '$push', '$addToSet']);

function isPlain(v: unknown): v is Doc {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function eachValues(v: unknown): unknown[] | undefined {
  if (isPlain(v) && Object.keys(v).some((k) => k.startsWith('$'))) {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$each' && Array.isArray(v.$each)) return v.$each;
    return undefined;
  }
  return [v];
}

/**
 * Applies an operator update to doc in place when every operator and path is a simple case.
 * Returns whether the document changed, or undefined (doc untouched) to defer to mingo.
 */
export function fastUpdate(doc: Doc, update: Doc): boolean | undefined {
  const plans: Array<{ op: string; parent: Doc | undefined; parentPath: string[]; leaf: string; value: unknown }> = [];
  const paths: string[] = [];
  for (const [op, fields] of Object.entries(update)) {
    if (!FAST_OPS.has(op) || !isPlain(fields)) return undefined;
    for (const [path, value] of Object.entries(fields)) {
      const parts = path.split('.');
      if (parts.some((p) => p === '' || p.startsWith('$') || /^\d+$/.test(p))) return undefined;
      if (path === '_id') return undefined;
      // Walk to the parent; every step must be a plain document or missing.
      let parent: Doc | undefined = doc;
      for (const p of parts.slice(0, -1)) {
        const next: unknown = parent[p];
        if (next === undefined) {
          parent = undefined;
          break;
        }
        if (!isPlain(next)) return undefined;
        parent = next;
      }
      paths.push(path);
      plans.push({ op, parent, parentPath: parts.slice(0, -1), leaf: parts[parts.length - 1], value });
    }
  }
  // Overlapping paths are an error in MongoDB; let mingo report them.
  const sorted = [...paths].sort();
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] === sorted[i - 1] || sorted[i].startsWith(sorted[i - 1] + '.')) return undefined;
  }
  // Check every operand before changing anything.
  for (const plan of plans) {
    const current = plan.parent?.[plan.leaf];
    switch (plan.op) {
      case '$inc':
        if (typeof plan.value !== 'number' || (current !== undefined && typeof current !== 'number')) return undefined;
        break;
      case '$push':
      case '$addToSet':
        if (current !== undefined && !Array.isArray(current)) return undefined;
        if (!eachValues(plan.value)) return undefined;
        break;
      default:
        break;
    }
  }
  let modified = false;
  for (const plan of plans) {
    let parent = plan.parent;
    const current = parent?.[plan.leaf];
    const ensureParent = (): Doc => {
      if (parent) return parent;
      let cur = doc;
      for (const p of plan.parentPath) {
        if (cur[p] === undefined) cur[p] = {};
        cur = cur[p] as Doc;
      }
      return (parent = cur);
    };
    switch (plan.op) {
      case '$set':
        if (current === undefined || canonicalKey(current) !== canonicalKey(plan.value)) {
          ensureParent()[plan.leaf] = plan.value;
          modified = true;
        }
        break;
      case '$unset':
        if (parent && Object.hasOwn(parent, plan.leaf)) {
          delete parent[plan.leaf];
          modified = true;
        }
        break;
      case '$inc':
        if (current === undefined) {
          ensureParent()[plan.leaf] = plan.value;
          modified = true;
        } else if (plan.value !== 0) {
          ensureParent()[plan.leaf] = (current as number) + (plan.value as number);
          modified = true;
        }
        break;
      case '$min':
      case '$max': {
        const better = current === undefined || (plan.op === '$min' ? compare(plan.value, current) < 0 : compare(plan.value, current) > 0);
        if (better) {
          ensureParent()[plan.leaf] = plan.value;
          modified = true;
        }
        break;
      }
      case '$push': {
        const values = eachValues(plan.value) as unknown[];
        if (current === undefined) {
          ensureParent()[plan.leaf] = [...values];
          modified = true;
        } else if (values.length) {
          (current as unknown[]).push(...values);
          modified = true;
        }
        break;
      }
      case '$addToSet': {
        const values = eachValues(plan.value) as unknown[];
        const list = current === undefined ? [] : (current as unknown[]);
        const seen = new Set(list.map(canonicalKey));
        let added = current === undefined;
        for (const v of values) {
          const k = canonicalKey(v);
          if (seen.has(k)) continue;
          seen.add(k);
          list.push(v);
          added = true;
        }
        if (current === undefined) ensureParent()[plan.leaf] = list;
        modified ||= added;
        break;
      }
    }
  }
  return modified;
}
