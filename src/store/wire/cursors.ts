// Server-side cursors: a query's results, handed out in batches by find/aggregate and getMore.
// Results are computed whole when the cursor opens (the store has no streaming cursor), then
// kept until drained, killed, or idle for ten minutes (mongod's cursorTimeoutMillis).
import { BSON, Long, type Document } from 'bson';
import { CommandError } from './errors.ts';

const FIRST_BATCH = 101;
/** Keeps a batch well inside the 16 MiB reply limit. */
const BATCH_BYTES = 8 * 1024 * 1024;
const IDLE_MS = 10 * 60_000;

interface OpenCursor {
  ns: string;
  owner: string;
  docs: Document[];
  at: number;
  timer: NodeJS.Timeout;
}

export interface CursorReply {
  cursor: { id: Long; ns: string; firstBatch?: Document[]; nextBatch?: Document[] };
  ok: 1;
}

export class Cursors {
  readonly #open = new Map<number, OpenCursor>();
  #nextId = 1;

  /** The first batch of docs; the rest stay behind a cursor id unless single is true. */
  open(ns: string, owner: string, docs: Document[], batchSize: number | undefined, single = false): CursorReply {
    const cursor: OpenCursor = { ns, owner, docs, at: 0, timer: undefined as unknown as NodeJS.Timeout };
    const batch = take(cursor, batchSize ?? FIRST_BATCH);
    if (single || cursor.at >= docs.length) return { cursor: { id: Long.ZERO, ns, firstBatch: batch }, ok: 1 };
    const id = this.#nextId++;
    this.#open.set(id, cursor);
    this.#touch(id, cursor);
    return { cursor: { id: Long.fromNumber(id), ns, firstBatch: batch }, ok: 1 };
  }

  more(id: number, ns: string, owner: string, batchSize: number | undefined): CursorReply {
    const cursor = this.#open.get(id);
    if (!cursor || cursor.ns !== ns) throw new CommandError('CursorNotFound', `cursor id ${id} not found`);
    if (cursor.owner !== owner) throw new CommandError('Unauthorized', `cursor id ${id} belongs to another user`);
    const batch = take(cursor, batchSize ?? Number.MAX_SAFE_INTEGER);
    if (cursor.at >= cursor.docs.length) {
      this.#close(id);
      return { cursor: { id: Long.ZERO, ns, nextBatch: batch }, ok: 1 };
    }
    this.#touch(id, cursor);
    return { cursor: { id: Long.fromNumber(id), ns, nextBatch: batch }, ok: 1 };
  }

  /** Returns the ids that were open. */
  kill(ids: number[]): { killed: number[]; notFound: number[] } {
    const killed: number[] = [];
    const notFound: number[] = [];
    for (const id of ids) (this.#close(id) ? killed : notFound).push(id);
    return { killed, notFound };
  }

  closeAll(): void {
    for (const id of [...this.#open.keys()]) this.#close(id);
  }

  #touch(id: number, cursor: OpenCursor): void {
    clearTimeout(cursor.timer);
    cursor.timer = setTimeout(() => this.#close(id), IDLE_MS);
    cursor.timer.unref();
  }

  #close(id: number): boolean {
    const cursor = this.#open.get(id);
    if (!cursor) return false;
    clearTimeout(cursor.timer);
    this.#open.delete(id);
    return true;
  }
}

function take(cursor: OpenCursor, batchSize: number): Document[] {
  const limit = batchSize > 0 ? batchSize : Number.MAX_SAFE_INTEGER;
  const batch: Document[] = [];
  let bytes = 0;
  while (cursor.at < cursor.docs.length && batch.length < limit) {
    const doc = cursor.docs[cursor.at];
    bytes += BSON.calculateObjectSize(doc);
    if (batch.length > 0 && bytes > BATCH_BYTES) break;
    batch.push(doc);
    cursor.at++;
  }
  return batch;
}
