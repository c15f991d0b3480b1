// The embedded engine's core: one SQLite connection (node:sqlite, in Node 24 and Deno 2), the
// lock that serialises this process's transactions on it, the catalog of collections and
// indexes, and the TTL sweeper.
//
// Isolation: a transaction holds the engine's lock from its start to its end, and every
// operation outside a transaction waits for the lock (one connection sees its own uncommitted
// writes, so nothing else may run on it meanwhile): every schedule is serial.
//
// Group commit: SQLite's COMMIT writes every page the transaction dirtied to the WAL, and that,
// not the statements, was most of a decision's cost. So the transactions (and the writes outside
// one) that a turn of the event loop starts share one SQLite transaction. They queue on the lock
// while the turn goes on parsing requests; at the turn's end (setImmediate) the first opens the
// group with BEGIN IMMEDIATE (SQLite's write lock, taken up front, so read-then-write transactions
// of other processes wait instead of interleaving), each runs in a savepoint of it (a failed one
// rolls back to its savepoint and leaves the others alone), and the group commits once nobody
// waits for the lock and the promise callbacks then pending have run (a mailbox's next command
// joins), or sooner past GROUP_LIMIT transactions or GROUP_MAX_MS. So SQLite's
// write lock is held only while transactions run, not while this process does its HTTP work: a
// second process (WEB_CONCURRENCY, or the worker) does its own meanwhile. Nothing is acknowledged
// before the commit: a transaction, a write, and a read that could have seen the group's writes
// all resolve only once the group is durable, and all fail if its commit fails.
import { AsyncLocalStorage } from 'node:async_hooks';
import { MongoServerError } from 'mongodb';
import { randomUUID } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { isMainThread, type Worker } from 'node:worker_threads';
import { startSmallThread } from '../../small-thread.ts';
import { sha256Hex } from '../../digest.ts';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { CollectionData, Index, type IndexOptions } from './collection-data.ts';
import { collectionOf, quoteIdent, tableOf } from './table-names.ts';
import { COLLECTION_TABLES, INTERNAL_PREFIX } from './database-file.ts';
import { Mutex } from './mutex.ts';
import { decode, encode, type Doc } from './values.ts';

type TxState = 'active' | 'committed' | 'aborted';

export class Transaction {
  readonly engine: Engine;
  state: TxState = 'active';
  /** The error of an operation that failed in it: as on MongoDB, that aborts the transaction (see Engine.atomic). */
  failure: unknown = undefined;

  constructor(engine: Engine) {
    this.engine = engine;
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

/** Prepared statements kept for reuse; bounded, since SQL text could in principle vary without end. */
const STATEMENT_CACHE_LIMIT = 512;

/** How long a write waits for another process's write lock before it fails (SQLITE_BUSY). */
export const BUSY_TIMEOUT_MS = 10_000;
const SQLITE_BUSY = 5;
/** How long a busy database is tried again at every turn of the event loop, after another connection's commit: see #begin. */
const BUSY_SPIN_MS = 1;

/** A group commits after this many transactions even if the event loop's turn has not ended... */
const GROUP_LIMIT = 64;
/** ...or once it has been open this long (it holds SQLite's write lock meanwhile). */
export const GROUP_MAX_MS = 20;

/** The SQLite transaction that the transactions of one turn of the event loop share. */
class Group {
  readonly openedAt = Date.now();
  readonly #maxMs: number;
  members = 0;
  /** Past the limits: commit when the lock is next released, even if others wait for it. */
  due = false;
  readonly committed: Promise<void>;
  resolve!: () => void;
  reject!: (error: unknown) => void;

  constructor(maxMs: number) {
    this.#maxMs = maxMs;
    this.committed = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // Nobody may be waiting (a group of reads only); its failure is still reported to every member.
    this.committed.catch(() => undefined);
  }

  /** Counts a member in; past the limits the group commits when the lock is released, not at the end of the turn. */
  join(): void {
    this.members++;
    if (this.members >= GROUP_LIMIT || Date.now() - this.openedAt >= this.#maxMs) this.due = true;
  }
}

export interface EngineOptions {
  dbName: string;
  /** How often expired documents of TTL indexes are removed (MongoDB: 60 s). */
  ttlSweepIntervalMs: number;
  /** How long a commit group may stay open (GROUP_MAX_MS). */
  groupMaxMs: number;
}

export class Engine {
  readonly dbName: string;
  readonly db: DatabaseSync;
  readonly #groupMaxMs: number;
  readonly #collections = new Map<string, CollectionData>();
  readonly #statements = new Map<string, StatementSync>();
  readonly #mutex = new Mutex();
  #group: Group | undefined;
  /** The transaction whose write is running (synchronously): see atomic(). */
  #writingIn: Transaction | undefined;
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #checkpointer: Worker | undefined;
  /** The WAL file, watched while this process waits for another's write lock (undefined in memory). */
  readonly #walPath: string | undefined;
  /** null: watching failed (the platform, or the file went away); waits are timed only. */
  #walWatcher: FSWatcher | null | undefined;
  readonly #walWaiters = new Set<(changed: boolean) => void>();
  /** The catalog version this process's collection metadata reflects (-1: reload). */
  #catalog = -1;
  /** Moves on whenever rows remembered in the open group may no longer be what SQLite holds: see rowEpoch. */
  #rowEpoch = 0;
  #closed = false;

  constructor(db: DatabaseSync, location: string, options: EngineOptions) {
    this.db = db;
    this.dbName = options.dbName;
    this.#groupMaxMs = options.groupMaxMs;
    this.#walPath = location === ':memory:' ? undefined : `${location}-wal`;
    // One checkpointer per process: a store opened on a worker thread shares the file with the main
    // thread's store, whose checkpointer copies the WAL for both.
    if (location !== ':memory:' && isMainThread) {
      this.#checkpointer = startSmallThread(new URL('./checkpointer.js', import.meta.url), { workerData: { file: location, intervalMs: 1000 } });
      this.#checkpointer.unref();
      // Without it, a checkpointer that could not start (its file gone, say) would end the process.
      // The WAL then only grows until the next start; every committed write is still in it.
      this.#checkpointer.on('error', (error) => process.emitWarning(`the WAL checkpointer of ${location} stopped: ${error.message}`));
    }
    this.#timer = setInterval(() => void this.sweepExpired().catch(() => undefined), options.ttlSweepIntervalMs);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  statement(sql: string): StatementSync {
    let s = this.#statements.get(sql);
    if (!s) {
      if (this.#statements.size >= STATEMENT_CACHE_LIMIT) this.#statements.clear();
      s = this.db.prepare(sql);
      this.#statements.set(sql, s);
    }
    return s;
  }

  // --- catalog -----------------------------------------------------------------------------

  /**
   * Reloads collection and index metadata when another process (or a rolled-back transaction)
   * changed it. Every operation calls this first; it costs one indexed read.
   */
  #sync(): void {
    const row = this.statement("SELECT v FROM _sc_meta WHERE k = 'catalog'").get() as { v: number } | undefined;
    const version = row?.v ?? 0;
    if (version === this.#catalog) return;
    this.#rowEpoch++;
    this.#statements.clear();
    for (const data of this.#collections.values()) {
      data.exists = false;
      data.indexes.clear();
    }
    for (const { name } of this.statement(COLLECTION_TABLES).all() as Array<{ name: string }>) {
      this.data(collectionOf(name)).exists = true;
    }
    for (const { ix, coll, spec } of this.statement('SELECT ix, coll, spec FROM _sc_indexes ORDER BY ix').all() as Array<{ ix: number; coll: string; spec: string }>) {
      const { key, ...options } = decode(spec) as unknown as { key: Doc } & IndexOptions;
      const index = new Index(ix, key, options);
      this.data(coll).indexes.set(index.name, index);
    }
    this.#catalog = version;
  }

  #bumpCatalog(): void {
    this.#rowEpoch++;
    this.statement("INSERT INTO _sc_meta (k, v) VALUES ('catalog', 1) ON CONFLICT (k) DO UPDATE SET v = v + 1").run();
    this.#catalog = (this.statement("SELECT v FROM _sc_meta WHERE k = 'catalog'").get() as { v: number }).v;
  }

  /**
   * The epoch under which a collection may remember the rows it read or wrote (CollectionData's row
   * cache): only while this process holds the write lock in an open group, when no other process or
   * thread can change a row. It moves on when the group ends, a step of it is undone, or the catalog
   * changes; undefined when no group is open.
   */
  get rowEpoch(): number | undefined {
    return this.#group ? this.#rowEpoch : undefined;
  }

  data(name: string): CollectionData {
    let data = this.#collections.get(name);
    if (!data) {
      checkCollectionName(this.dbName, name);
      // Every name asked for is remembered, even one with no table (a find on it): past a bound, those
      // that hold nothing are forgotten, or a reader asking for made-up names would grow this for ever.
      if (this.#collections.size >= KNOWN_COLLECTIONS) {
        for (const [known, each] of this.#collections) if (!each.exists && each.indexes.size === 0) this.#collections.delete(known);
      }
      data = new CollectionData(this, name);
      this.#collections.set(name, data);
    }
    return data;
  }

  collectionNames(): string[] {
    return [...this.#collections.values()].filter((c) => c.exists).map((c) => c.name).sort();
  }

  createTable(name: string): void {
    this.db.exec(`CREATE TABLE IF NOT EXISTS ${quoteIdent(tableOf(name))} (r INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL, ks TEXT)`);
    this.#bumpCatalog();
  }

  /**
   * Kept in the stored form of documents, so that a partial filter's Date or ObjectId comes back as one
   * (plain JSON made them strings). A spec written as plain JSON before reads the same way: its only
   * $-keys are query operators, which decoding leaves alone.
   */
  recordIndex(collection: string, spec: Doc): number {
    const result = this.statement('INSERT INTO _sc_indexes (coll, name, spec) VALUES (?, ?, ?)').run(collection, spec.name as string, encode(spec));
    this.#bumpCatalog();
    return Number(result.lastInsertRowid);
  }

  /** Removes a secondary index: its definition and every key of it. */
  dropIndex(collection: string, name: string): void {
    const data = this.data(collection);
    const index = data.indexes.get(name);
    if (!index) return;
    this.statement('DELETE FROM _sc_keys WHERE ix = ?').run(index.ix);
    // And from each row's list of its keys: the next index may get the same number, and must not
    // take the dropped one's keys for its own.
    this.db.prepare(`UPDATE ${quoteIdent(tableOf(collection))} SET ks = nullif(json_remove(ks, ?), '{}') WHERE ks IS NOT NULL`).run(`$."${index.ix}"`);
    this.statement('DELETE FROM _sc_indexes WHERE ix = ?').run(index.ix);
    this.#bumpCatalog();
    data.indexes.delete(name);
  }

  dropCollection(name: string): boolean {
    const data = this.data(name);
    if (!data.exists) return false;
    this.statement('DELETE FROM _sc_keys WHERE ix IN (SELECT ix FROM _sc_indexes WHERE coll = ?)').run(name);
    this.statement('DELETE FROM _sc_indexes WHERE coll = ?').run(name);
    this.#statements.clear();
    this.db.exec(`DROP TABLE ${quoteIdent(tableOf(name))}`);
    this.#bumpCatalog();
    data.exists = false;
    data.indexes.clear();
    return true;
  }

  // --- running operations ------------------------------------------------------------------

  #ensureOpen(): void {
    if (this.#closed) throw new Error('the embedded store is closed');
  }

  #check(session: unknown): Transaction | undefined {
    this.#ensureOpen();
    if (session !== undefined && session !== null) {
      const tx = session instanceof EmbeddedSession ? session.transaction : undefined;
      if (!tx || tx.engine !== this) throw new Error('this session does not belong to this embedded store');
      if (tx.state !== 'active') throw new Error('this session\'s transaction has already ended');
      if (tx.failure !== undefined) throw transactionAborted(tx.failure);
      return tx;
    }
    const inside = currentTransaction.getStore();
    if (inside && inside.engine === this && inside.state === 'active') {
      // Waiting for the lock here would wait for ourselves forever.
      throw new Error(
        'a store operation ran inside withTransaction() without { session }: pass the session to every call in the callback'
      );
    }
    return undefined;
  }

  async #acquire(): Promise<void> {
    await this.#mutex.acquire();
    if (this.#closed) this.#mutex.release();
    this.#ensureOpen();
  }

  /**
   * Releases the lock, committing first a group that is due. A group nobody waits to join commits once
   * the promise callbacks now pending have run (process.nextTick runs after the microtask queue is
   * empty): a transaction's successor in its organisation's mailbox starts from those callbacks and joins
   * this group, instead of one decision per agent per turn of the event loop.
   */
  #release(): void {
    const group = this.#group;
    if (group?.due) this.#commitGroup();
    this.#mutex.release();
    if (group && this.#group === group && !this.#mutex.locked) process.nextTick(() => this.#commitIfIdle(group));
  }

  #commitIfIdle(group: Group): void {
    if (this.#group === group && !this.#mutex.locked && !this.#closed) this.#commitGroup();
  }

  /** The open group, opened (BEGIN IMMEDIATE) when there is none. Called holding the lock. */
  async #joinGroup(): Promise<Group> {
    if (this.#group) return this.#group;
    // Let the turn's other requests reach the lock first: they run in this group, and the write lock
    // is not held while they are parsed.
    await new Promise((resolve) => setImmediate(resolve));
    this.#ensureOpen();
    await this.#begin();
    const group = new Group(this.#groupMaxMs);
    this.#group = group;
    try {
      this.#sync();
    } catch (error) {
      this.#failGroup(error);
      throw error;
    }
    return group;
  }

  /**
   * BEGIN IMMEDIATE without blocking the event loop while another process holds the write lock:
   * SQLite's busy handler would sleep on this thread, stopping every request of the process. So the
   * attempt does not wait, and a busy database is tried again, up to BUSY_TIMEOUT_MS: whenever the WAL
   * file is written (another connection commits, and gives the lock back right after) and every
   * millisecond besides; after such a write, at every turn of the event loop for BUSY_SPIN_MS. Sleeping
   * on 1 ms timers alone missed the brief gaps between another process's groups (two web processes did
   * 0.6 of the work of one), and retrying at every turn all along took a core from the process holding
   * the lock (twice the CPU per decision). Meanwhile this process goes on parsing requests, whose
   * transactions join the group once it opens.
   */
  async #begin(): Promise<void> {
    const deadline = Date.now() + BUSY_TIMEOUT_MS;
    let spinUntil = performance.now() + BUSY_SPIN_MS;
    for (;;) {
      this.statement('PRAGMA busy_timeout = 0').run();
      try {
        this.statement('BEGIN IMMEDIATE').run();
        return;
      } catch (error) {
        if (((error as { errcode?: number }).errcode ?? 0) % 256 !== SQLITE_BUSY || Date.now() >= deadline) throw error;
      } finally {
        this.statement(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`).run();
      }
      if (performance.now() < spinUntil) await new Promise((resolve) => setImmediate(resolve));
      else if (await this.#walWritten(1)) spinUntil = performance.now() + BUSY_SPIN_MS;
      this.#ensureOpen();
    }
  }

  /** Resolves true at the next write to the WAL file, or false after ms, whichever comes first. */
  #walWritten(ms: number): Promise<boolean> {
    this.#watchWal();
    return new Promise((resolve) => {
      const done = (changed: boolean) => {
        clearTimeout(timer);
        this.#walWaiters.delete(done);
        resolve(changed);
      };
      const timer = setTimeout(done, ms, false);
      this.#walWaiters.add(done);
    });
  }

  #watchWal(): void {
    if (this.#walWatcher !== undefined || this.#walPath === undefined) return;
    const stop = () => {
      this.#walWatcher?.close();
      this.#walWatcher = null;
    };
    try {
      this.#walWatcher = watch(this.#walPath, { persistent: false }, () => {
        for (const waiter of [...this.#walWaiters]) waiter(true);
      });
      this.#walWatcher.on('error', stop);
    } catch {
      stop();
    }
  }

  /** Commits the open group. Called holding the lock. */
  #commitGroup(): void {
    const group = this.#group!;
    this.#group = undefined;
    this.#rowEpoch++;
    try {
      this.statement('COMMIT').run();
    } catch (error) {
      // A full disk (SQLITE_FULL; the WAL grows at COMMIT) ends here: SQLite may have rolled the
      // transaction back itself or left it open; #failGroup rolls back what is left and forgets the
      // rows and catalog this process remembered, and every member (transactions, writes, reads that
      // could have seen them) fails, none acknowledged. So memory never runs ahead of the file, and
      // the next group starts from what is on disk once space returns.
      this.#group = group;
      this.#failGroup(error);
      return;
    }
    group.resolve();
  }

  /** The group's SQLite transaction is lost (or must be): none of its members' writes stay. */
  #failGroup(error: unknown): void {
    const group = this.#group;
    this.#group = undefined;
    this.#catalog = -1;
    this.#rowEpoch++;
    if (!this.#closed && this.db.isTransaction) {
      try {
        this.statement('ROLLBACK').run();
      } catch {
        // The connection is unusable; the error reported is the one that got us here.
      }
    }
    group?.reject(error);
  }

  /** Runs op in a savepoint of the open group; on error none of its rows stay and the error is thrown. */
  #inSavepoint<T>(name: string, op: () => T): T {
    this.statement(`SAVEPOINT ${name}`).run();
    try {
      const result = op();
      this.statement(`RELEASE ${name}`).run();
      return result;
    } catch (error) {
      this.#undoSavepoint(name, error);
      throw error;
    }
  }

  #undoSavepoint(name: string, error: unknown): void {
    // SQLite rolls a whole transaction back by itself after some errors (disk full, I/O).
    if (!this.db.isTransaction) return this.#failGroup(error);
    this.#rowEpoch++;
    try {
      this.statement(`ROLLBACK TO ${name}`).run();
      this.statement(`RELEASE ${name}`).run();
      // A table the step created is gone again: reload the catalog inside the transaction.
      this.#catalog = -1;
      this.#sync();
    } catch (undo) {
      this.#failGroup(undo);
    }
  }

  /** Resolves once what the caller may have seen of the open group is durable (at once when none is open). */
  #durable(group: Group | undefined): Promise<void> {
    return group ? group.committed : Promise.resolve();
  }

  /** Runs a synchronous read: in the session's transaction, or once no transaction holds the lock. */
  async read<T>(session: unknown, op: () => T): Promise<T> {
    const tx = this.#check(session);
    if (tx) return this.#inTransaction(tx, op);
    // With no group open the connection is idle (whoever holds the lock waits for the turn to end,
    // or for another process's write lock): a synchronous read needs no lock.
    if (!this.#group) {
      this.#sync();
      return op();
    }
    await this.#acquire();
    let result: T;
    const group = this.#group;
    try {
      if (!group) this.#sync();
      result = op();
    } finally {
      this.#release();
    }
    await this.#durable(group);
    return result;
  }

  /**
   * Runs a synchronous write atomically: in the session's transaction (which a failure aborts, as on
   * MongoDB, and whose savepoint undoes it), else in a savepoint of its own in the group.
   */
  async write<T>(session: unknown, op: () => T): Promise<T> {
    const tx = this.#check(session);
    if (tx) {
      this.#writingIn = tx;
      try {
        return this.#inTransaction(tx, op);
      } finally {
        this.#writingIn = undefined;
      }
    }
    await this.#acquire();
    let result: T;
    let group: Group | undefined;
    try {
      group = await this.#joinGroup();
      result = this.#inSavepoint('w', op);
      group.join();
    } catch (error) {
      this.#release();
      await this.#durable(group).catch(() => undefined);
      throw error;
    }
    this.#release();
    await group.committed;
    return result;
  }

  /**
   * Runs one step of a write so that, if it fails, none of its rows stay. Outside a transaction, in a
   * savepoint: the steps before it stay, as on MongoDB. Inside one, a failed step aborts the
   * transaction, as on MongoDB, and the transaction's own savepoint undoes everything when it ends:
   * no savepoint per step (their statements and page copies were 5% of a decision's cost).
   */
  atomic<T>(op: () => T): T {
    const tx = this.#writingIn;
    return tx ? this.#inTransaction(tx, op) : this.#inSavepoint('step', op);
  }

  /** Runs an operation of tx: as on MongoDB, one that fails (a read too) aborts the transaction. */
  #inTransaction<T>(tx: Transaction, op: () => T): T {
    try {
      return op();
    } catch (error) {
      tx.failure ??= error;
      throw error;
    }
  }

  /** `onApplied` is called once the transaction is applied in its group, before the group commits. */
  async withTransaction<T>(fn: (session: EmbeddedSession) => Promise<T>, onApplied?: () => void): Promise<T> {
    this.#ensureOpen();
    const inside = currentTransaction.getStore();
    if (inside && inside.engine === this && inside.state === 'active') {
      throw new Error('withTransaction() was called inside another transaction of the same store: transactions do not nest');
    }
    await this.#acquire();
    const tx = new Transaction(this);
    const session = new EmbeddedSession(tx);
    let group: Group | undefined;
    let result: T;
    try {
      group = await this.#joinGroup();
      this.statement('SAVEPOINT tx').run();
      try {
        result = await currentTransaction.run(tx, () => fn(session));
        this.#ensureOpen();
        // The callback went on after an operation of it failed: MongoDB refuses the commit the same way.
        if (tx.failure !== undefined) throw transactionAborted(tx.failure);
        this.statement('RELEASE tx').run();
      } catch (error) {
        if (!this.#closed) this.#undoSavepoint('tx', error);
        throw error;
      }
      group.join();
      tx.state = 'committed';
    } catch (error) {
      tx.state = 'aborted';
      session.hasEnded = true;
      this.#release();
      // An error can rest on what it read of the group (a duplicate key): report it once that is durable.
      await this.#durable(group).catch(() => undefined);
      throw error;
    }
    session.hasEnded = true;
    this.#release();
    onApplied?.();
    await group.committed.catch((error) => {
      tx.state = 'aborted';
      throw error;
    });
    return result;
  }

  // --- TTL -------------------------------------------------------------------------------

  /** Removes documents whose TTL index date plus expireAfterSeconds has passed. */
  async sweepExpired(): Promise<number> {
    if (this.#closed) return 0;
    return this.write(undefined, () => {
      const now = Date.now();
      let removed = 0;
      for (const data of this.#collections.values()) if (data.exists) removed += data.expire(now);
      return removed;
    });
  }

  // --- secrets and lifecycle -------------------------------------------------------------

  /**
   * The SHA-256 digest (hex) of a credential kept under name, made from make() by the first process
   * that asks, which alone gets the credential back (`created`) to show it once: the database keeps
   * only the digest. A credential kept in plain text by an earlier version under secret:<name> is
   * replaced by its digest, in the same write, so that two processes starting at once agree on it.
   */
  async credentialDigest(name: string, make: () => string): Promise<{ sha256: string; created: string | null }> {
    return this.write(undefined, () => {
      const key = `secret-sha256:${name}`;
      // Its bytes overwritten, not only unlinked from the page (a page's free space keeps what was deleted).
      this.statement('PRAGMA secure_delete = ON').run();
      let plain: { v: string } | undefined;
      try {
        plain = this.statement('DELETE FROM _sc_meta WHERE k = ? RETURNING v').get(`secret:${name}`) as { v: string } | undefined;
      } finally {
        this.statement('PRAGMA secure_delete = OFF').run();
      }
      const kept = this.statement('SELECT v FROM _sc_meta WHERE k = ?').get(key) as { v: string } | undefined;
      if (kept) return { sha256: kept.v, created: null };
      const value = plain?.v ?? make();
      const sha256 = sha256Hex(value);
      this.statement('INSERT INTO _sc_meta (k, v) VALUES (?, ?)').run(key, sha256);
      return { sha256, created: plain === undefined ? value : null };
    });
  }

  /** The value kept under name, stored from make() by the first process that asks. */
  async secret(name: string, make: () => string): Promise<{ value: string; created: boolean }> {
    return this.write(undefined, () => {
      const inserted = this.statement('INSERT INTO _sc_meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO NOTHING').run(`secret:${name}`, make());
      const row = this.statement('SELECT v FROM _sc_meta WHERE k = ?').get(`secret:${name}`) as { v: string };
      return { value: row.v, created: Number(inserted.changes) === 1 };
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Waits for the transaction in progress, checkpoints the WAL into the database file and closes. */
  async close(): Promise<void> {
    if (this.#closed) return;
    clearInterval(this.#timer);
    await this.#mutex.acquire();
    try {
      if (this.#closed) return;
      if (this.#group) this.#commitGroup();
      this.#closed = true;
      this.#walWatcher?.close();
      if (this.#checkpointer) {
        // Held open until it has closed its connection (it is unref'd so as not to keep a process alive).
        this.#checkpointer.ref();
        this.#checkpointer.postMessage('stop');
        await new Promise((resolve) => this.#checkpointer!.once('exit', resolve));
      }
      this.#statements.clear();
      // Without waiting: the lock may be held by another store of this very thread (whose group
      // commits only when this thread is free again), and SQLite's busy handler would sleep here for
      // the whole busy_timeout, every timer and request of the process stopped with it. A checkpoint
      // that cannot run now is left to the next one; the WAL keeps every committed write meanwhile.
      this.db.exec('PRAGMA busy_timeout = 0');
      try {
        this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      } catch {
        // Busy: see above.
      }
      this.db.close();
    } finally {
      this.#mutex.release();
    }
  }
}

/**
 * MongoDB's answer to an operation, or the commit, of a transaction that a failed operation aborted:
 * NoSuchTransaction, labelled transient (a retry of the whole transaction may succeed), as mongod labels it.
 */
function transactionAborted(cause: unknown): MongoServerError {
  const reason = (cause as Error)?.message ?? String(cause);
  return new MongoServerError({
    message: `Transaction has been aborted: an operation in it failed (${reason})`,
    code: 251,
    codeName: 'NoSuchTransaction',
    errorLabels: ['TransientTransactionError'],
  });
}

/** Collections (with a table or not) an engine remembers before it forgets those without one. */
const KNOWN_COLLECTIONS = 1024;

function checkCollectionName(dbName: string, name: string): void {
  if (typeof name !== 'string' || name === '' || name.includes('\0') || name.includes('$') || name.startsWith(INTERNAL_PREFIX) || name.startsWith('sqlite_')) {
    throw new Error(`invalid collection name ${JSON.stringify(String(name).slice(0, 300))}`);
  }
  // MongoDB's limit on a namespace (database.collection), in bytes.
  if (Buffer.byteLength(`${dbName}.${name}`) > 255) throw new Error(`invalid collection name: the namespace is longer than 255 bytes`);
}
