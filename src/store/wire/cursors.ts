// Server-side cursors: a query's results, handed out in batches by find/aggregate and getMore.
// Results are computed whole when the cursor opens (the store has no streaming cursor), then
// kept until drained, killed, their connection closes, or idle for ten minutes (mongod's
// cursorTimeoutMillis). Because each open cursor holds its whole result in the web process's
// memory, results and open cursors are capped (CursorLimits): past a cap the command is refused
// rather than the process running out of memory.
import { randomBytes } from 'node:crypto';
import { BSON, Long, type Document } from 'bson';
import { CommandError } from './errors.ts';

const FIRST_BATCH = 101;
/** Keeps a batch well inside the 16 MiB reply limit. */
export const BATCH_BYTES = 8 * 1024 * 1024;
const IDLE_MS = 10 * 60_000;

export interface CursorLimits {
  /** Cursors one user may hold open at once. */
  perUser: number;
  /** Cursors open at once, all users together. */
  total: number;
  /** Documents one result (find or aggregate) may hold. */
  resultDocuments: number;
  /** Estimated (BSON) bytes one user's open cursors may hold together. */
  bytesPerUser: number;
}

/**
 * What a Cursors is built with unless told otherwise. The listener builds its own Cursors, so a
 * test lowers these before starting one (each test file runs in its own process).
 */
export const cursorLimits: CursorLimits = {
  perUser: 64,
  total: 256,
  resultDocuments: 100_000,
  bytesPerUser: 64 * 1024 * 1024,
};

interface OpenCursor {
  ns: string;
  owner: string;
  /** The connection that last used it: its close closes the cursor. */
  conn: number | undefined;
  docs: Document[];
  bytes: number;
  at: number;
  timer: NodeJS.Timeout;
}

export interface CursorReply {
  cursor: { id: Long; ns: string; firstBatch?: Document[]; nextBatch?: Document[] };
  ok: 1;
}

/** A cursor id as a client sends it (a number, or a Long past 2^53), or undefined. */
export function cursorId(value: unknown): bigint | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'bigint') return value;
  if (Long.isLong(value)) return value.toBigInt();
  return undefined;
}

function tooMuch(message: string): CommandError {
  // mongod's code for a memory limit that allowDiskUse cannot lift (ExceededMemoryLimit, 146),
  // not 292 QueryExceededMemoryLimitNoDiskUseAllowed, whose advice (allowDiskUse) would not help.
  return new CommandError('ExceededMemoryLimit', message);
}

export class Cursors {
  readonly limits: CursorLimits;
  readonly #open = new Map<bigint, OpenCursor>();

  constructor(limits: Partial<CursorLimits> = {}) {
    this.limits = { ...cursorLimits, ...limits };
  }

  /**
   * The first batch of docs; the rest stay behind a cursor id unless single is true. conn is the
   * connection it came on, whose close closes the cursor (see closeConnection).
   */
  open(ns: string, owner: string, docs: Document[], batchSize: number | undefined, single = false, conn?: number): CursorReply {
    if (docs.length > this.limits.resultDocuments) {
      throw tooMuch(`the result has more than ${this.limits.resultDocuments} documents, the most this listener holds for one query: narrow it ($match, $limit, $project) or page through it`);
    }
    const cursor: OpenCursor = { ns, owner, conn, docs, bytes: 0, at: 0, timer: undefined as unknown as NodeJS.Timeout };
    const batch = take(cursor, batchSize ?? FIRST_BATCH);
    if (single || cursor.at >= docs.length) return { cursor: { id: Long.ZERO, ns, firstBatch: batch }, ok: 1 };
    const mine = [...this.#open.values()].filter((c) => c.owner === owner);
    if (mine.length >= this.limits.perUser || this.#open.size >= this.limits.total) {
      const which = mine.length >= this.limits.perUser ? `user ${owner} has ${mine.length}` : `${this.#open.size} are open`;
      throw tooMuch(`too many open cursors (${which}): exhaust or close some (killCursors), or ask for fewer documents than one batch`);
    }
    for (let i = cursor.at; i < docs.length; i++) cursor.bytes += BSON.calculateObjectSize(docs[i]);
    const held = mine.reduce((sum, c) => sum + c.bytes, 0);
    if (held + cursor.bytes > this.limits.bytesPerUser) {
      throw tooMuch(`the result would take the open cursors of user ${owner} past ${this.limits.bytesPerUser} bytes: narrow it, or exhaust or close other cursors`);
    }
    const id = this.#newId();
    this.#open.set(id, cursor);
    this.#touch(id, cursor);
    return { cursor: { id: Long.fromBigInt(id), ns, firstBatch: batch }, ok: 1 };
  }

  more(id: bigint, ns: string, owner: string, batchSize: number | undefined, conn?: number): CursorReply {
    const cursor = this.#open.get(id);
    if (!cursor || cursor.ns !== ns) throw new CommandError('CursorNotFound', `cursor id ${id} not found`);
    // mongod answers Unauthorized here too (it does not pretend the cursor is missing).
    if (cursor.owner !== owner) throw new CommandError('Unauthorized', `cursor id ${id} was not created by the authenticated user`);
    cursor.conn = conn;
    const batch = take(cursor, batchSize ?? Number.MAX_SAFE_INTEGER);
    if (cursor.at >= cursor.docs.length) {
      this.#close(id);
      return { cursor: { id: Long.ZERO, ns, nextBatch: batch }, ok: 1 };
    }
    this.#touch(id, cursor);
    return { cursor: { id: Long.fromBigInt(id), ns, nextBatch: batch }, ok: 1 };
  }

  /** Closes the owner's cursors on ns among ids; any other id is reported as not found. */
  kill(ids: bigint[], ns: string, owner: string): { killed: bigint[]; notFound: bigint[] } {
    const killed: bigint[] = [];
    const notFound: bigint[] = [];
    for (const id of ids) {
      const cursor = this.#open.get(id);
      const mine = cursor !== undefined && cursor.owner === owner && cursor.ns === ns;
      (mine && this.#close(id) ? killed : notFound).push(id);
    }
    return { killed, notFound };
  }

  /** The listener calls this when a connection closes: its cursors can no longer be drained by it. */
  closeConnection(conn: number): void {
    for (const [id, cursor] of this.#open) if (cursor.conn === conn) this.#close(id);
  }

  closeAll(): void {
    for (const id of [...this.#open.keys()]) this.#close(id);
  }

  /** Random, so that one user cannot guess another's cursor ids; positive 63-bit, as mongod's. */
  #newId(): bigint {
    for (;;) {
      const id = randomBytes(8).readBigUInt64BE() & 0x7fff_ffff_ffff_ffffn;
      if (id !== 0n && !this.#open.has(id)) return id;
    }
  }

  #touch(id: bigint, cursor: OpenCursor): void {
    clearTimeout(cursor.timer);
    cursor.timer = setTimeout(() => this.#close(id), IDLE_MS);
    cursor.timer.unref();
  }

  #close(id: bigint): boolean {
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
