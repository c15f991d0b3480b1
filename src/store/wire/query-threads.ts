// The analyst's reads run off the request thread, each with a deadline (docs/operate/analysts.md,
// "Deadlines"; docs/internals/design.md §2). A query thread opens its own read-only connection to
// the store's database file (query-thread-main.ts); a read that outlives its deadline (maxTimeMS,
// 30 s at most) is answered MaxTimeMSExpired (50) and its thread is ended with worker.terminate():
// the one way to stop a regular expression that backtracks for ever inside V8. The web process's
// HTTP requests never wait for an analyst. A few threads are kept (one by default: on a 2-core
// machine a second busy thread would take the request thread's core); reads beyond them queue,
// their deadlines running. A read whose connection closes is dropped from the queue, or its thread
// ended, at once: nobody is left to read its answer, and the thread is the other analysts' too.
import { BSON, type Document } from 'bson';
import { Worker } from 'node:worker_threads';
import { CommandError } from './errors.ts';

export interface QueryRequest {
  op: 'find' | 'aggregate' | 'count' | 'distinct';
  collection: string;
  args: Document;
}

export interface QueryResult {
  docs?: Document[];
  n?: number;
  values?: unknown[];
}

export interface QueryThreadOptions {
  /** Threads that run reads at once (default 1). */
  threads: number;
  /** The deadline of a read that sets no maxTimeMS, and the most one may set (default 30 s). */
  maxTimeMs: number;
  /** The most a thread's heap may grow to; past it the read fails with ExceededMemoryLimit (default 512 MB). */
  memoryMb: number;
  /** A thread with nothing to do ends after this long (default 60 s). */
  idleMs: number;
}

export const queryThreadDefaults: QueryThreadOptions = { threads: 1, maxTimeMs: 30_000, memoryMb: 512, idleMs: 60_000 };

/**
 * Decoded from the thread's BSON as exactly what was stored: numbers keep their BSON types
 * (int32, double, int64), as they would have had the read run in this thread.
 */
const DESERIALIZE: BSON.DeserializeOptions = { promoteLongs: false, promoteValues: false, promoteBuffers: false };

interface Job {
  id: number;
  location: string;
  dbName: string;
  request: Uint8Array;
  /** The most the result may take as BSON: the thread refuses a larger one before handing it over. */
  maxBytes: number;
  resolve: (result: QueryResult) => void;
  reject: (error: unknown) => void;
  timer: NodeJS.Timeout;
  thread?: Thread;
  deadlineMs: number;
}

interface Thread {
  worker: Worker;
  job?: Job;
  idle?: NodeJS.Timeout;
}

function decodeDocs(bytes: Uint8Array): Document[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const docs: Document[] = [];
  for (let at = 0; at < buffer.length; ) {
    const size = buffer.readInt32LE(at);
    docs.push(BSON.deserialize(buffer.subarray(at, at + size), DESERIALIZE));
    at += size;
  }
  return docs;
}

function disconnected(): CommandError {
  return new CommandError('ClientDisconnect', 'the connection that sent the read closed; it was stopped');
}

function expired(ms: number): CommandError {
  return new CommandError('MaxTimeMSExpired', `operation exceeded time limit: ${ms} ms (the analyst's reads are stopped at their maxTimeMS, and at the listener's limit)`);
}

export class QueryThreads {
  readonly options: QueryThreadOptions;
  readonly #threads = new Set<Thread>();
  readonly #queue: Job[] = [];
  #ids = 0;
  #closed = false;

  constructor(options: Partial<QueryThreadOptions> = {}) {
    this.options = { ...queryThreadDefaults, ...options };
  }

  /** The deadline of a command: its maxTimeMS (0 or none: the listener's), never past the listener's. */
  deadline(command: Document): number {
    const asked = command.maxTimeMS;
    if (asked === undefined || asked === null) return this.options.maxTimeMs;
    const ms = typeof asked === 'object' && asked !== null && 'valueOf' in asked ? Number(asked.valueOf()) : asked;
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0) throw new CommandError('BadValue', 'maxTimeMS must be a non-negative whole number of milliseconds');
    return ms === 0 ? this.options.maxTimeMs : Math.min(ms, this.options.maxTimeMs);
  }

  /** Runs a read; `gone` is its connection's: once aborted, the read is dropped (ClientDisconnect). */
  run(location: string, dbName: string, request: QueryRequest, deadlineMs: number, maxBytes: number, gone?: AbortSignal): Promise<QueryResult> {
    if (this.#closed) return Promise.reject(new CommandError('InternalError', 'the listener is closing'));
    if (gone?.aborted) return Promise.reject(disconnected());
    return new Promise<QueryResult>((resolve, reject) => {
      const drop = () => this.#expire(job, disconnected());
      const settled = () => gone?.removeEventListener('abort', drop);
      const job: Job = {
        id: ++this.#ids,
        location,
        dbName,
        request: BSON.serialize(request as unknown as Document, { ignoreUndefined: true }),
        maxBytes,
        resolve: (result) => (settled(), resolve(result)),
        reject: (error) => (settled(), reject(error)),
        deadlineMs,
        timer: undefined as unknown as NodeJS.Timeout,
      };
      job.timer = setTimeout(() => this.#expire(job, expired(deadlineMs)), deadlineMs);
      gone?.addEventListener('abort', drop, { once: true });
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) {
      clearTimeout(job.timer);
      job.reject(new CommandError('InternalError', 'the listener is closing'));
    }
    await Promise.all([...this.#threads].map((thread) => this.#end(thread, new CommandError('InternalError', 'the listener is closing'))));
  }

  /** Stops a read that is queued or running (its deadline passed, or its connection closed). */
  #expire(job: Job, why: CommandError): void {
    const queued = this.#queue.indexOf(job);
    if (queued >= 0) {
      this.#queue.splice(queued, 1);
      clearTimeout(job.timer);
      job.reject(why);
      return;
    }
    // Running: only ending its thread stops it.
    if (job.thread && job.thread.job === job) void this.#end(job.thread, why);
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let thread = [...this.#threads].find((t) => !t.job);
      if (!thread) {
        if (this.#threads.size >= this.options.threads) return;
        thread = this.#start();
      }
      const job = this.#queue.shift()!;
      clearTimeout(thread.idle);
      thread.job = job;
      job.thread = thread;
      thread.worker.postMessage({ id: job.id, location: job.location, dbName: job.dbName, request: job.request, maxBytes: job.maxBytes });
    }
  }

  #start(): Thread {
    const worker = new Worker(new URL('./query-thread-main.ts', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: this.options.memoryMb },
    });
    // Idle threads do not hold the process open; a running one holds its caller's promise instead.
    worker.unref();
    const thread: Thread = { worker };
    this.#threads.add(thread);
    worker.on('message', (reply: { id: number; docs?: Uint8Array; other?: Uint8Array; error?: { message: string; code?: unknown; codeName?: unknown } }) => {
      const job = thread.job;
      if (!job || job.id !== reply.id) return;
      thread.job = undefined;
      clearTimeout(job.timer);
      if (reply.error) job.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code, codeName: reply.error.codeName }));
      else if (reply.docs) job.resolve({ docs: decodeDocs(reply.docs) });
      else job.resolve(BSON.deserialize(reply.other!, DESERIALIZE) as QueryResult);
      thread.idle = setTimeout(() => void this.#end(thread), this.options.idleMs).unref();
      this.#dispatch();
    });
    const failed = (error: unknown) => {
      const outOfMemory = (error as { code?: unknown })?.code === 'ERR_WORKER_OUT_OF_MEMORY';
      void this.#end(
        thread,
        outOfMemory
          ? new CommandError('ExceededMemoryLimit', `the query needed more than the ${this.options.memoryMb} MB a query thread may hold: narrow it ($match, $project, $limit)`)
          : new CommandError('InternalError', `the query thread failed: ${String((error as Error)?.message ?? error)}`),
      );
    };
    worker.on('error', failed);
    worker.on('exit', () => failed(new Error('the query thread stopped')));
    return thread;
  }

  /** Ends a thread; its read, if any, fails with why. */
  async #end(thread: Thread, why?: unknown): Promise<void> {
    if (!this.#threads.delete(thread)) return;
    clearTimeout(thread.idle);
    const job = thread.job;
    thread.job = undefined;
    if (job) {
      clearTimeout(job.timer);
      job.reject(why ?? new CommandError('InternalError', 'the query thread stopped'));
    }
    await thread.worker.terminate();
    if (!this.#closed) this.#dispatch();
  }
}
