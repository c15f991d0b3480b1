// A query thread's entry point (src/store/wire/query-threads.ts): runs the analyst's reads (find,
// aggregate, count, distinct) on its own read-only connection to the store's database file, so that
// a slow or pathological query takes this thread, never the web process's request thread, and can
// be stopped by ending the thread. Each read runs in one SQLite read transaction: WAL gives it a
// snapshot of what was committed when it began ($lookup included), and it never blocks a writer.
import { BSON, type Document } from 'bson';
import { DatabaseSync } from 'node:sqlite';
import { parentPort } from 'node:worker_threads';
import { EmbeddedDb } from '../embedded/embedded-store.ts';
import { Engine, GROUP_MAX_MS } from '../embedded/engine.ts';
import type { QueryRequest, QueryResult } from './query-threads.ts';

/** As the listener decodes commands (frames.ts), so a filter means here what it would mean there. */
const DESERIALIZE: BSON.DeserializeOptions = { promoteLongs: true, promoteValues: true, promoteBuffers: false };
const SERIALIZE: BSON.SerializeOptions = { ignoreUndefined: true };
/** Never: the thread's connection is read-only; the store's own process sweeps. */
const NO_SWEEP_MS = 2 ** 31 - 1;

interface Opened {
  db: DatabaseSync;
  embedded: EmbeddedDb;
}

const opened = new Map<string, Opened>();

function open(location: string, dbName: string): Opened {
  const key = `${dbName}\0${location}`;
  let found = opened.get(key);
  if (!found) {
    const db = new DatabaseSync(location, { readOnly: true });
    db.exec('PRAGMA busy_timeout = 10000');
    db.exec('PRAGMA cache_size = -16000');
    const engine = new Engine(db, location, { dbName, ttlSweepIntervalMs: NO_SWEEP_MS, groupMaxMs: GROUP_MAX_MS });
    found = { db, embedded: new EmbeddedDb(engine) };
    opened.set(key, found);
  }
  return found;
}

async function run(embedded: EmbeddedDb, request: Document): Promise<QueryResult> {
  const coll = embedded.collection(request.collection);
  const a = request.args as Document;
  switch (request.op) {
    case 'find':
      return { docs: await coll.find(a.filter, { sort: a.sort, projection: a.projection, skip: a.skip, limit: a.limit }).toArray() };
    case 'aggregate':
      return { docs: await coll.aggregate(a.pipeline).toArray() };
    case 'count':
      return { n: await coll.countDocuments(a.query, { ...(a.skip ? { skip: a.skip } : {}), ...(a.limit ? { limit: a.limit } : {}) }) };
    case 'distinct':
      return { values: await coll.distinct(a.key, a.query) };
    default:
      throw new Error(`unknown query ${String(request.op)}`);
  }
}

/**
 * Documents as one buffer of BSON documents end to end (each starts with its length): one copy, one
 * message. Refused (ExceededMemoryLimit, 146) past maxBytes, before anything leaves this thread: the
 * web process decodes what it receives whole, and its memory is not this thread's to spend.
 */
function encodeDocs(docs: Document[], maxBytes: number): Uint8Array {
  const parts: Uint8Array[] = [];
  let bytes = 0;
  for (const doc of docs) {
    const part = BSON.serialize(doc, SERIALIZE);
    bytes += part.byteLength;
    if (bytes > maxBytes) {
      throw Object.assign(new Error(`the result is larger than ${maxBytes} bytes, the most the listener holds for one user: narrow it ($match, $project, $limit) or page through it`), {
        code: 146,
        codeName: 'ExceededMemoryLimit',
      });
    }
    parts.push(part);
  }
  return Buffer.concat(parts);
}

const port = parentPort!;
port.on('message', async (message: { id: number; location: string; dbName: string; request: Uint8Array; maxBytes: number }) => {
  let reply: Document;
  try {
    const request = BSON.deserialize(message.request, DESERIALIZE);
    const { db, embedded } = open(message.location, message.dbName);
    db.exec('BEGIN');
    let result: QueryResult;
    try {
      result = await run(embedded, request);
    } finally {
      db.exec('COMMIT');
    }
    reply = result.docs ? { id: message.id, docs: encodeDocs(result.docs, message.maxBytes) } : { id: message.id, other: encodeDocs([{ n: result.n, values: result.values }], message.maxBytes) };
  } catch (error) {
    const e = error as { message?: unknown; code?: unknown; codeName?: unknown };
    reply = { id: message.id, error: { message: typeof e?.message === 'string' ? e.message : String(error), code: e?.code, codeName: e?.codeName } };
  }
  port.postMessage(reply);
});
