// Value helpers of the embedded engine: copying documents in and out (no aliasing between
// callers and storage) and canonical keys for Maps (ids and index entries).
import { BSON, ObjectId } from 'mongodb';

const { EJSON } = BSON;

export type Doc = Record<string, unknown>;

/** A plain document (an object literal, or one without a prototype), not an instance of a class. */
export function isPlain(v: unknown): v is Doc {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** BSON value classes (ObjectId, Decimal128, Long, Binary...) are immutable: shared, not copied. */
function isBsonValue(v: object): boolean {
  return typeof (v as { _bsontype?: unknown })._bsontype === 'string';
}

/**
 * Copies a value on its way into storage, converting it the way the driver's BSON serialiser
 * would (ignoreUndefined: false): undefined becomes null, bigint becomes a number, and class
 * instances are stored as plain documents of their own enumerable properties.
 */
export function cloneIn(v: unknown): unknown {
  if (v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof Date) return new Date(v.getTime());
  if (Array.isArray(v)) return v.map(cloneIn);
  if (isBsonValue(v)) return v;
  if (v instanceof RegExp) return new RegExp(v.source, v.flags);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
  const out: Doc = {};
  for (const k of Object.keys(v)) {
    const x = (v as Doc)[k];
    if (typeof x === 'function' || typeof x === 'symbol') continue;
    setField(out, k, cloneIn(x));
  }
  return out;
}

export function cloneDocIn(d: object): Doc {
  return cloneIn(d) as Doc;
}

/** Copies a stored value on its way out to a caller. */
export function cloneOut<T>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof Date) return new Date(v.getTime()) as T;
  if (Array.isArray(v)) return v.map(cloneOut) as T;
  if (isPlain(v)) {
    const out: Doc = {};
    for (const k of Object.keys(v)) setField(out, k, cloneOut((v as Doc)[k]));
    return out as T;
  }
  if (v instanceof Uint8Array) return new Uint8Array(v) as T;
  if (v instanceof RegExp) return new RegExp(v.source, v.flags) as T;
  return v;
}

/**
 * A string that is equal for two values exactly when MongoDB's equality match would treat
 * them as the same index key (type-tagged, so 1 and '1' differ; object keys in order, as BSON).
 */
export function canonicalKey(v: unknown): string {
  if (v === undefined || v === null) return 'z';
  switch (typeof v) {
    case 'string':
      return 's' + v;
    case 'number':
      return 'n' + String(v === 0 ? 0 : v);
    case 'bigint':
      return 'n' + String(v);
    case 'boolean':
      return v ? 'bt' : 'bf';
    default:
      break;
  }
  if (v instanceof Date) return 'd' + v.getTime();
  if (isObjectId(v)) return 'o' + v.toHexString();
  if (Array.isArray(v)) return 'a[' + v.map(canonicalKey).join(',') + ']';
  if (v instanceof RegExp) return 'r' + String(v);
  if (typeof v === 'object' && isBsonValue(v)) return 'x' + (v as { _bsontype: string })._bsontype + String(v);
  if (typeof v === 'object') {
    const parts: string[] = [];
    for (const k of Object.keys(v)) parts.push(JSON.stringify(k) + ':' + canonicalKey((v as Doc)[k]));
    return '{' + parts.join(',') + '}';
  }
  return 'u' + String(v);
}

/** Duck-typed, so that an ObjectId from another copy of the bson package is one too. */
export function isObjectId(v: unknown): v is ObjectId {
  return typeof v === 'object' && v !== null && (v as { _bsontype?: unknown })._bsontype === 'ObjectId';
}

/** True for values an equality filter compares as a single index key (not an operator document). */
export function isIndexableScalar(v: unknown): boolean {
  if (v === null) return true;
  switch (typeof v) {
    case 'string':
    case 'number':
    case 'boolean':
      return true;
    case 'object':
      return v instanceof Date || isObjectId(v);
    default:
      return false;
  }
}

export interface PathValue {
  value: unknown;
  /** An array was met on the path: MongoDB would index every element (multikey). */
  multikey: boolean;
}

/** Reads a dotted path the way an index does; missing fields read as null. */
export function readPath(doc: Doc, path: string): PathValue {
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (Array.isArray(cur)) return { value: cur, multikey: true };
    if (cur === null || typeof cur !== 'object') return { value: null, multikey: false };
    cur = ownField(cur as Doc, part);
    if (cur === undefined) return { value: null, multikey: false };
  }
  return { value: cur, multikey: Array.isArray(cur) };
}

/** A document's own field: an inherited one (toString, valueOf, constructor) is not a field of it. */
export function ownField(doc: Doc, field: string): unknown {
  return Object.hasOwn(doc, field) ? doc[field] : undefined;
}

export function hasPath(doc: Doc, path: string): boolean {
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part)) return false;
    cur = (cur as Doc)[part];
  }
  return true;
}

export function newObjectId(): ObjectId {
  return new ObjectId();
}

// --- the stored form: MongoDB Extended JSON (relaxed) ----------------------------------------
// Documents are stored as JSON text so that analysts can read them with SQLite's JSON functions;
// the values JSON lacks keep their type through Extended JSON wrappers ({"$date": "..."},
// {"$oid": "..."}), which is also what mongoexport and mongosh print.

/** A function or symbol: left out of a document, null in an array (as JSON.stringify does). */
const OMIT = Symbol('omit');

/** Wraps a stored document whose own field names start with $ (see storedForm). */
const ESCAPED = '$doc';

/**
 * The Extended JSON form of a value, ready for JSON.stringify without a replacer (a replacer
 * costs a call from V8's serialiser into JavaScript for every key of every document). Copies only
 * the objects and arrays that contain something to convert; the rest is passed through as is.
 */
function storedForm(v: unknown): unknown {
  switch (typeof v) {
    case 'string':
    case 'number':
    case 'boolean':
      return v;
    case 'bigint':
      return Number(v);
    case 'undefined':
      return null;
    case 'function':
    case 'symbol':
      return OMIT;
    default:
      break;
  }
  if (v === null) return null;
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      let y = storedForm(x);
      if (y === OMIT) y = null;
      if (out) out.push(y);
      else if (y !== x) {
        out = v.slice(0, i);
        out.push(y);
      }
    }
    return out ?? v;
  }
  const o = v as Doc;
  if (o instanceof Date) return dateForm(o);
  if (isBsonValue(o)) {
    if (isObjectId(o)) return { $oid: o.toHexString() };
    return EJSON.serialize(o, { relaxed: true });
  }
  if (o instanceof RegExp) {
    // BSON keeps only these flags, as the driver does.
    const options = [...o.flags].filter((f) => 'imsux'.includes(f)).sort().join('');
    return { $regularExpression: { pattern: o.source, options } };
  }
  if (ArrayBuffer.isView(o)) {
    const bytes = new Uint8Array(o.buffer, o.byteOffset, o.byteLength);
    return { $binary: { base64: Buffer.from(bytes).toString('base64'), subType: '00' } };
  }
  if (typeof o.toJSON === 'function') return storedForm((o.toJSON as (key: string) => unknown)(''));
  let out: Doc | undefined;
  let dollar = false;
  const keys = Object.keys(o);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    if (k.charCodeAt(0) === 36 /* $ */) dollar = true;
    const x = o[k];
    const y = storedForm(x);
    if (out) {
      if (y !== OMIT) setField(out, k, y);
    } else if (y !== x) {
      out = {};
      for (let j = 0; j < i; j++) setField(out, keys[j], o[keys[j]]);
      if (y !== OMIT) setField(out, k, y);
    }
  }
  // A document of the caller's own with a field named like an Extended JSON wrapper ({"$date": ...}):
  // kept under the ESCAPED key, or it would come back as a date.
  return dollar ? { [ESCAPED]: out ?? o } : (out ?? o);
}

/**
 * Sets a field of a copy being built. An ordinary object, not one without a prototype: V8 serialises
 * those (dictionary-mode objects) at a third of the speed. So a field named __proto__ is defined
 * rather than assigned, which would set the prototype instead.
 */
function setField(out: Doc, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  else out[k] = v;
}

/**
 * make(key), remembered for the few keys that recur. Bounded: everything is forgotten when `limit`
 * keys are kept, which costs those few keys one more make() each.
 */
export function memo<K, V>(limit: number, make: (key: K) => V): (key: K) => V {
  const kept = new Map<K, V>();
  return (key) => {
    let value = kept.get(key);
    if (value === undefined) {
      value = make(key);
      if (kept.size >= limit) kept.clear();
      kept.set(key, value);
    }
    return value;
  };
}

/**
 * The texts of recent dates. A decision writes the same few dates many times (now, the periods'
 * bounds) and toISOString() was a third of the cost of storing a budget window.
 */
const isoText = memo(1024, (time: number) => new Date(time).toISOString());
/** And the other way, for reading: Date's string parser is slower than a lookup. */
const isoTime = memo(1024, (text: string) => new Date(text).getTime());

function dateForm(d: Date): { $date: string } | null {
  const t = d.getTime();
  return Number.isNaN(t) ? null : { $date: isoText(t) };
}

function dateOf(text: string): Date {
  return new Date(isoTime(text));
}

/** The stored text of a document. */
export function encode(doc: object): string {
  const text = JSON.stringify(storedForm(doc));
  // JSON writes a NUL character as \u0000: the rare text holding one is looked at key by key.
  if (text.includes('\\u0000')) refuseNulKeys(JSON.parse(text));
  return text;
}

/**
 * BSON field names are C strings: the driver refuses a document with a NUL character in one before
 * sending it, and the wire listener could not send such a stored document back. Refused the same way.
 */
export function refuseNulKeys(v: unknown): void {
  if (v === null || typeof v !== 'object' || v instanceof Date || v instanceof RegExp || ArrayBuffer.isView(v) || isBsonValue(v)) return;
  if (Array.isArray(v)) {
    for (const x of v) refuseNulKeys(x);
    return;
  }
  for (const k of Object.keys(v)) {
    if (k.includes('\0')) throw new BSON.BSONError(`key ${k} must not contain null bytes`);
    refuseNulKeys((v as Doc)[k]);
  }
}

function decodeValue(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x !== null && typeof x === 'object') v[i] = decodeValue(x);
    }
    return v;
  }
  const o = v as Doc;
  for (const k in o) {
    if (k.charCodeAt(0) === 36 /* $ */) {
      if (k === ESCAPED) return decodeFields(o[ESCAPED] as Doc);
      if (k === '$date' && typeof o.$date === 'string') return dateOf(o.$date);
      if (k === '$oid' && typeof o.$oid === 'string') return new ObjectId(o.$oid);
      if (k === '$regularExpression') {
        const re = o.$regularExpression as { pattern: string; options: string };
        return new RegExp(re.pattern, re.options.replace('x', ''));
      }
      return EJSON.deserialize(o, { relaxed: true });
    }
    const x = o[k];
    if (x !== null && typeof x === 'object') o[k] = decodeValue(x);
  }
  return o;
}

/** The fields of a document whose own field names are not wrappers (an ESCAPED one's). */
function decodeFields(o: Doc): Doc {
  for (const k in o) {
    const x = o[k];
    if (x !== null && typeof x === 'object') o[k] = decodeValue(x);
  }
  return o;
}

/** A fresh document from its stored text (nothing is shared with storage or other readers). */
export function decode(text: string): Doc {
  return decodeValue(JSON.parse(text)) as Doc;
}
