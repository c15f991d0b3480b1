// Fast paths for the shapes of filter and update the service runs on every request: equality
// filters on scalars, and the common update operators on plain dotted paths. Anything else
// (or any doubt, such as an array on the path) is left to mingo, which is the reference for
// semantics; these must agree with it wherever they answer.
import { compare } from 'mingo/util';
import { canonicalKey, isIndexableScalar, isPlain, memo, ownField, type Doc } from './values.ts';

export type Matcher = (doc: Doc) => boolean;

/** A number comparison of a filter, on a finite number: the only operators the fast matcher answers. */
const COMPARISONS: Record<string, (have: number, want: number) => boolean> = {
  $gt: (have, want) => have > want,
  $gte: (have, want) => have >= want,
  $lt: (have, want) => have < want,
  $lte: (have, want) => have <= want,
};

type Condition = { kind: 'eq'; key: string } | { kind: 'cmp'; test: (have: number, want: number) => boolean; want: number };

/** The condition a filter's value sets on its field, when it is one the fast matcher answers. */
function conditionOf(v: unknown): Condition | undefined {
  if (v !== null && isIndexableScalar(v)) return { kind: 'eq', key: canonicalKey(v) };
  if (!isPlain(v)) return undefined;
  const ops = Object.keys(v);
  const test = ops.length === 1 ? COMPARISONS[ops[0]] : undefined;
  const want = test ? v[ops[0]] : undefined;
  return test && typeof want === 'number' && Number.isFinite(want) ? { kind: 'cmp', test, want } : undefined;
}

/**
 * A matcher for filters made only of top-level equalities on non-null scalars and comparisons of a field
 * with a finite number ($gt, $gte, $lt, $lte: a field holding no number never matches one, as MongoDB
 * compares numbers with numbers only); it defers to `slow` for a document whose field holds an array or a
 * document (MongoDB's array semantics), or NaN.
 */
export function equalityMatcher(filter: Doc, slow: () => Matcher): Matcher | undefined {
  const entries: Array<[string, Condition]> = [];
  for (const [k, v] of Object.entries(filter)) {
    const condition = k.startsWith('$') || k.includes('.') ? undefined : conditionOf(v);
    if (condition === undefined) return undefined;
    entries.push([k, condition]);
  }
  return (doc) => {
    for (const [k, condition] of entries) {
      const have = doc[k];
      if (have !== null && typeof have === 'object' && !(have instanceof Date) && !('_bsontype' in have)) return slow()(doc);
      if (condition.kind === 'eq') {
        if (canonicalKey(have) !== condition.key) return false;
      } else {
        if (typeof have !== 'number') return false;
        if (Number.isNaN(have)) return slow()(doc);
        if (!condition.test(have, condition.want)) return false;
      }
    }
    return true;
  };
}

const FAST_OPS = new Set(['$set', '$unset', '$inc', '$min', '$max', '$push', '$addToSet']);

function eachValues(v: unknown): unknown[] | undefined {
  if (isPlain(v) && Object.keys(v).some((k) => k.startsWith('$'))) {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$each' && Array.isArray(v.$each)) return v.$each;
    return undefined;
  }
  return [v];
}

interface Plan {
  op: string;
  /** The path's segments; the last is the field written. */
  parts: string[];
  /** The document holding the field, when every step to it exists. */
  parent: Doc | undefined;
  value: unknown;
}

/** A path split into its segments, or null when it is not a simple path; remembered, as few paths recur. */
const simplePath = memo(1024, (path: string): string[] | null => {
  const parts = path.split('.');
  // __proto__ is left to mingo, which refuses it: assigned here, it would reach a prototype.
  if (path === '_id' || parts.some((p) => p === '' || p === '__proto__' || p.startsWith('$') || /^\d+$/.test(p))) return null;
  return parts;
});

/** MongoDB's equality of two values (canonicalKey's), without building keys for the common cases. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b || (a == null && b == null)) return true;
  const ta = typeof a;
  const tb = typeof b;
  if (ta === 'number' && tb === 'number') return Number.isNaN(a) && Number.isNaN(b);
  if ((ta === 'string' || ta === 'boolean' || ta === 'number') && (tb === 'string' || tb === 'boolean' || tb === 'number')) return false;
  return canonicalKey(a) === canonicalKey(b);
}

/** The parent of plan's field, created (as documents) where missing. */
function parentOf(doc: Doc, plan: Plan): Doc {
  if (plan.parent) return plan.parent;
  let cur = doc;
  for (let i = 0; i < plan.parts.length - 1; i++) {
    const p = plan.parts[i];
    if (ownField(cur, p) === undefined) cur[p] = {};
    cur = cur[p] as Doc;
  }
  return (plan.parent = cur);
}

/** Two paths of one update that are the same or one inside the other: an error in MongoDB. */
function overlapping(plans: Plan[]): boolean {
  for (let i = 0; i < plans.length; i++) {
    for (let j = i + 1; j < plans.length; j++) {
      const a = plans[i].parts;
      const b = plans[j].parts;
      const n = Math.min(a.length, b.length);
      let k = 0;
      while (k < n && a[k] === b[k]) k++;
      if (k === n) return true;
    }
  }
  return false;
}

/**
 * Applies an operator update to doc in place when every operator and path is a simple case.
 * Returns whether the document changed, or undefined (doc untouched) to defer to mingo.
 */
export function fastUpdate(doc: Doc, update: Doc): boolean | undefined {
  const plans: Plan[] = [];
  for (const op of Object.keys(update)) {
    const fields = update[op];
    if (!FAST_OPS.has(op) || !isPlain(fields)) return undefined;
    for (const path of Object.keys(fields)) {
      const parts = simplePath(path);
      if (parts === null) return undefined;
      // Walk to the parent; every step must be a plain document or missing.
      let parent: Doc | undefined = doc;
      for (let i = 0; i < parts.length - 1; i++) {
        const next: unknown = ownField(parent, parts[i]);
        if (next === undefined) {
          parent = undefined;
          break;
        }
        if (!isPlain(next)) return undefined;
        parent = next;
      }
      plans.push({ op, parts, parent, value: fields[path] });
    }
  }
  // Overlapping paths are an error in MongoDB; let mingo report them.
  if (plans.length > 1 && overlapping(plans)) return undefined;
  // Check every operand before changing anything.
  for (const plan of plans) {
    const current = plan.parent && ownField(plan.parent, plan.parts[plan.parts.length - 1]);
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
    const leaf = plan.parts[plan.parts.length - 1];
    const current = plan.parent && ownField(plan.parent, leaf);
    switch (plan.op) {
      case '$set':
        if (current === undefined || !sameValue(current, plan.value)) {
          parentOf(doc, plan)[leaf] = plan.value;
          modified = true;
        }
        break;
      case '$unset':
        if (plan.parent && Object.hasOwn(plan.parent, leaf)) {
          delete plan.parent[leaf];
          modified = true;
        }
        break;
      case '$inc':
        if (current === undefined) {
          parentOf(doc, plan)[leaf] = plan.value;
          modified = true;
        } else if (plan.value !== 0) {
          parentOf(doc, plan)[leaf] = (current as number) + (plan.value as number);
          modified = true;
        }
        break;
      case '$min':
      case '$max': {
        const better = current === undefined || (plan.op === '$min' ? compare(plan.value, current) < 0 : compare(plan.value, current) > 0);
        if (better) {
          parentOf(doc, plan)[leaf] = plan.value;
          modified = true;
        }
        break;
      }
      case '$push': {
        const values = eachValues(plan.value) as unknown[];
        if (current === undefined) {
          parentOf(doc, plan)[leaf] = [...values];
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
        if (current === undefined) parentOf(doc, plan)[leaf] = list;
        modified ||= added;
        break;
      }
    }
  }
  return modified;
}
