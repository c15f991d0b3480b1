// The embedded engine's core: the collections, the lock that serialises transactions, the
// undo log that rolls a transaction back, and the TTL sweeper.
//
// Isolation is by mutual exclusion: a transaction holds the engine's lock from its first
// instruction to its commit or rollback, and every operation outside a transaction waits for
// the lock to be free before it runs (each such operation runs synchronously once started).
// So nothing observes uncommitted writes, and every schedule is serial: no lost updates.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { CollectionData, type IndexOptions } from './collection-data.ts';
import { Mutex } from './mutex.ts';
import { canonicalKey, newObjectId, readPath, type Doc } from './values.ts';

type TxState = 'active' | 'committed' | 'aborted';

export class Transaction {
  readonly engine: Engine;
  state: TxState = 'active';
  readonly #undo: Array<() => void> = [];

  constructor(engine: Engine) {
    this.engine = engine;
  }

  onRollback(step: () => void): void {
    this.#undo.push(step);
  }

  rollback(): void {
    // Newest first, so that each step finds the state its write left behind.
    for (let i = this.#undo.length - 1; i >= 0; i--) this.#undo[i]();
    this.#undo.length = 0;
    this.state = 'aborted';
  }

  commit(): void {
    this.#undo.length = 0;
    this.state = 'committed';
  }
}

/** The session handed to a transaction's callback: a small part of the driver's ClientSession. */
export class EmbeddedSession {
  readonly id = { id: randomUUID() };
  readonly transaction: Transaction;
  hasEnded = false;

  constructor(transaction: Transaction) {
    this.transaction = transaction;
  }

  inTransaction(): boolean {
    return this.transaction.state === 'active';
  }

  async endSession(): Promise<void> {
    this.hasEnded = true;
  }
}

const currentTransaction = new AsyncLocalStorage<Transaction>();

export interface EngineOptions {
  dbName: string;
  /** How often expired documents of TTL indexes are removed (MongoDB: 60 s). */
  ttlSweepIntervalMs: number;
}

export class Engine {
  readonly dbName: string;
  readonly collections = new Map<string, CollectionData>();
  readonly #mutex = new Mutex();
  readonly #timer: NodeJS.Timeout;
  #closed = false;

  constructor(options: EngineOptions) {
    this.dbName = options.dbName;
    this.#timer = setInterval(() => void this.sweepExpired(), options.ttlSweepIntervalMs);
    this.#timer.unref();
  }

  data(name: string): CollectionData {
    let data = this.collections.get(name);
    if (!data) {
      data = new CollectionData(this.dbName, name);
      this.collections.set(name, data);
    }
    return data;
  }

  /**
   * Runs one synchronous operation with the right exclusion: inside the session's transaction
   * when given one, otherwise once no transaction holds the lock.
   */
  async run<T>(session: unknown, op: (tx: Transaction | undefined) => T): Promise<T> {
    if (this.#closed) throw new Error('the embedded store is closed');
    if (session !== undefined && session !== null) {
      const tx = session instanceof EmbeddedSession ? session.transaction : undefined;
      if (!tx || tx.engine !== this) throw new Error('this session does not belong to this embedded store');
      if (tx.state !== 'active') throw new Error('this session\'s transaction has already ended');
      return op(tx);
    }
    const inside = currentTransaction.getStore();
    if (inside && inside.engine === this && inside.state === 'active') {
      // Waiting for the lock here would wait for ourselves forever.
      throw new Error(
        'a store operation ran inside withTransaction() without { session }: pass the session to every call in the callback'
      );
    }
    if (!this.#mutex.locked) return op(undefined);
    await this.#mutex.acquire();
    try {
      return op(undefined);
    } finally {
      this.#mutex.release();
    }
  }

  async withTransaction<T>(fn: (session: EmbeddedSession) => Promise<T>): Promise<T> {
    if (this.#closed) throw new Error('the embedded store is closed');
    const inside = currentTransaction.getStore();
    if (inside && inside.engine === this && inside.state === 'active') {
      throw new Error('withTransaction() was called inside another transaction of the same store: transactions do not nest');
    }
    await this.#mutex.acquire();
    const tx = new Transaction(this);
    const session = new EmbeddedSession(tx);
    try {
      const result = await currentTransaction.run(tx, () => fn(session));
      tx.commit();
      return result;
    } catch (error) {
      tx.rollback();
      throw error;
    } finally {
      session.hasEnded = true;
      this.#mutex.release();
    }
  }

  // --- writes, each recording how to undo itself -------------------------------------------

  markExists(data: CollectionData, tx: Transaction | undefined): void {
    if (data.exists) return;
    data.exists = true;
    tx?.onRollback(() => {
      data.exists = false;
    });
  }

  insert(data: CollectionData, doc: Doc, tx: Transaction | undefined): Doc {
    if (!Object.hasOwn(doc, '_id')) doc = { _id: newObjectId(), ...doc };
    const id = canonicalKey(doc._id);
    data.checkUnique(doc, id, true);
    data.put(id, doc);
    this.markExists(data, tx);
    tx?.onRollback(() => {
      data.take(id);
    });
    return doc;
  }

  replace(data: CollectionData, id: string, next: Doc, tx: Transaction | undefined): void {
    data.checkUnique(next, id, false);
    const prev = data.swap(id, next);
    if (prev) tx?.onRollback(() => void data.swap(id, prev));
  }

  remove(data: CollectionData, id: string, tx: Transaction | undefined): void {
    const prev = data.take(id);
    if (prev) tx?.onRollback(() => data.put(id, prev));
  }

  createIndex(data: CollectionData, keyPattern: Doc, options: IndexOptions): string {
    return data.addIndex(keyPattern, options);
  }

  // --- TTL -------------------------------------------------------------------------------

  /** Removes documents whose TTL index date plus expireAfterSeconds has passed. */
  async sweepExpired(): Promise<number> {
    if (this.#closed) return 0;
    await this.#mutex.acquire();
    try {
      if (this.#closed) return 0;
      const now = Date.now();
      let removed = 0;
      for (const data of this.collections.values()) {
        for (const index of data.indexes.values()) {
          if (index.expireAfterSeconds === undefined || index.fields.length !== 1) continue;
          const limit = now - index.expireAfterSeconds * 1000;
          for (const [id, doc] of data.docs) {
            if (expiresBy(readPath(doc, index.fields[0]).value, limit)) {
              data.take(id);
              removed++;
            }
          }
        }
      }
      return removed;
    } finally {
      this.#mutex.release();
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
  }
}

/** A TTL index expires a document by its date, or by the earliest date of an array. */
function expiresBy(value: unknown, limit: number): boolean {
  if (value instanceof Date) return value.getTime() <= limit;
  if (Array.isArray(value)) return value.some((v) => v instanceof Date && v.getTime() <= limit);
  return false;
}
