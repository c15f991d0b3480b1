// Logical sessions and multi-document transactions across wire messages. A transaction is one
// store.withTransaction() call whose callback stays open on a promise that commitTransaction or
// abortTransaction settles; a transaction left open longer than the lifetime limit is aborted
// (mongod's transactionLifetimeLimitSeconds, 60 s) so that it cannot hold the store forever.
// Because the store runs one transaction at a time, operations wait for an open one, each holding a
// client connection; a client whose connections all wait cannot send the open transaction its next
// operation. So a transaction that sits idle while others have waited STALL_MS is aborted too
// (TransientTransactionError: the driver retries it).
// The last retryable write of each session is remembered, so a retried write is not run twice.
import type { Document } from 'bson';
import type { Store, StoreSession } from '../store.ts';
import { CommandError } from './errors.ts';

type TxnState = 'active' | 'committing' | 'committed' | 'aborted';

interface Transaction {
  number: number;
  store: Store;
  state: TxnState;
  abortReason: string;
  session: Promise<StoreSession>;
  finish(outcome: 'commit' | 'abort'): void;
  done: Promise<void>;
  timer?: NodeJS.Timeout;
  /** It holds the store (its callback is running). */
  holding: boolean;
  /** Its operations in progress, and when the last one ended. */
  running: number;
  idleSince: number;
}

interface SessionState {
  txn?: Transaction;
  lastWrite?: { txnNumber: number; reply: Document };
  lastUsed: number;
}

const ABORT = Symbol('abort');
const TRANSIENT = ['TransientTransactionError'];
const SESSION_IDLE_MS = 30 * 60_000;
const STALL_MS = 2_000;

function sessionKey(owner: string, lsid: unknown): string | undefined {
  const id = (lsid as { id?: { buffer?: Uint8Array; position?: number } } | undefined)?.id;
  if (!id?.buffer) return undefined;
  return `${owner}:${Buffer.from(id.buffer.subarray(0, id.position ?? id.buffer.length)).toString('hex')}`;
}

export interface TransactionContext {
  /** The store session to pass to every operation, when the command runs in a transaction. */
  session?: StoreSession;
  /** Aborts the transaction after a failed operation, as mongod does. */
  fail(): void;
  /** The operation is over. */
  leave(): void;
}

export class Sessions {
  readonly #lifetimeMs: number;
  readonly #states = new Map<string, SessionState>();
  readonly #sweeper: NodeJS.Timeout;
  readonly #watchdog: NodeJS.Timeout;
  /** Start times of operations that are not (yet) inside a transaction holding the store. */
  readonly #waiting = new Set<{ since: number }>();

  constructor(lifetimeMs: number) {
    this.#lifetimeMs = lifetimeMs;
    this.#sweeper = setInterval(() => this.#sweep(), 60_000);
    this.#sweeper.unref();
    this.#watchdog = setInterval(() => this.#breakStalls(), STALL_MS / 4);
    this.#watchdog.unref();
  }

  /** Counts an operation as waiting for the store until the returned function is called. */
  waiting(): () => void {
    const entry = { since: Date.now() };
    this.#waiting.add(entry);
    return () => this.#waiting.delete(entry);
  }

  #breakStalls(): void {
    const now = Date.now();
    let oldest = now;
    for (const entry of this.#waiting) oldest = Math.min(oldest, entry.since);
    if (now - oldest < STALL_MS) return;
    for (const { txn } of this.#states.values()) {
      if (txn?.state === 'active' && txn.holding && txn.running === 0 && now - txn.idleSince >= STALL_MS) {
        this.#abort(txn, `it held the store idle for ${STALL_MS / 1000} s while other operations waited for it`);
      }
    }
  }

  #state(owner: string, command: Document): SessionState | undefined {
    const key = sessionKey(owner, command.lsid);
    if (!key) return undefined;
    let state = this.#states.get(key);
    if (!state) this.#states.set(key, (state = { lastUsed: Date.now() }));
    state.lastUsed = Date.now();
    return state;
  }

  /**
   * Opens or joins the command's transaction; `{}` for a command outside any transaction. `store`
   * undefined: a command that touches no database's data joins the transaction whatever its store.
   */
  async enter(owner: string, command: Document, store: Store | undefined): Promise<TransactionContext> {
    const none: TransactionContext = { fail() {}, leave() {} };
    if (command.autocommit !== false) return none;
    const state = this.#state(owner, command);
    const number = Number(command.txnNumber);
    if (!state || !Number.isSafeInteger(number)) throw new CommandError('BadValue', 'a transaction needs lsid and txnNumber');
    let txn = state.txn;
    if (command.startTransaction === true) {
      if (txn && txn.number >= number) {
        throw new CommandError('TransactionTooOld', `txnNumber ${number} is not newer than this session's ${txn.number}`);
      }
      if (store === undefined) throw new CommandError('OperationNotSupportedInTransaction', 'a transaction cannot start with a command that reads no data');
      if (txn) this.#abort(txn, 'a newer transaction started on its session');
      state.txn = txn = this.#begin(number, store);
    }
    if (!txn || txn.number !== number) {
      throw new CommandError('NoSuchTransaction', `Given transaction number ${number} does not match any in-progress transactions.`, TRANSIENT);
    }
    if (store !== undefined && txn.store !== store) {
      throw new CommandError('OperationNotSupportedInTransaction', 'a transaction here spans one database only');
    }
    const session = await txn.session.catch(() => undefined);
    if (!session || txn.state !== 'active') {
      throw new CommandError('NoSuchTransaction', `Transaction ${number} has been aborted: ${txn.abortReason}.`, TRANSIENT);
    }
    const t = txn;
    t.running++;
    return {
      session,
      fail: () => this.#abort(t, 'an operation in it failed'),
      leave: () => {
        t.running--;
        t.idleSince = Date.now();
      },
    };
  }

  #begin(number: number, store: Store): Transaction {
    let resolveSession!: (s: StoreSession) => void;
    let rejectSession!: (e: unknown) => void;
    let finish!: (outcome: 'commit' | 'abort') => void;
    const session = new Promise<StoreSession>((resolve, reject) => ((resolveSession = resolve), (rejectSession = reject)));
    const outcome = new Promise<'commit' | 'abort'>((resolve) => (finish = resolve));
    const txn: Transaction = { number, store, state: 'active', abortReason: '', session, finish, done: Promise.resolve(), holding: false, running: 0, idleSince: Date.now() };
    let runs = 0;
    txn.done = store.withTransaction(async (s) => {
      // An engine that retries its callback cannot replay messages the client has already sent.
      if (++runs > 1) throw new CommandError('WriteConflict', 'the store restarted the transaction', TRANSIENT);
      txn.timer = setTimeout(() => this.#abort(txn, `it exceeded the ${this.#lifetimeMs / 1000} s transaction lifetime limit`), this.#lifetimeMs);
      txn.timer.unref();
      txn.holding = true;
      txn.idleSince = Date.now();
      resolveSession(s);
      if ((await outcome) === 'abort') throw ABORT;
    });
    txn.done.then(
      () => {
        clearTimeout(txn.timer);
        txn.holding = false;
      },
      (error) => {
        clearTimeout(txn.timer);
        txn.holding = false;
        if (txn.state !== 'aborted') {
          txn.state = 'aborted';
          txn.abortReason = error === ABORT ? 'it was aborted' : String((error as Error)?.message ?? error);
        }
        rejectSession(error);
      },
    );
    session.catch(() => {});
    return txn;
  }

  #abort(txn: Transaction, reason: string): void {
    if (txn.state !== 'active') return;
    txn.state = 'aborted';
    txn.abortReason = reason;
    txn.finish('abort');
  }

  async commit(owner: string, command: Document): Promise<void> {
    const state = this.#state(owner, command);
    const number = Number(command.txnNumber);
    const txn = state?.txn;
    if (!txn || txn.number !== number) {
      throw new CommandError('NoSuchTransaction', `Given transaction number ${number} does not match any in-progress transactions.`, TRANSIENT);
    }
    if (txn.state === 'committed') return; // a retried commit: committing is idempotent
    if (txn.state === 'committing') {
      await txn.done.catch(() => {});
    } else if (txn.state === 'active') {
      txn.state = 'committing';
      txn.finish('commit');
      await txn.done.catch(() => {});
      if (txn.state === 'committing') txn.state = 'committed';
    }
    if (txn.state !== 'committed') {
      throw new CommandError('NoSuchTransaction', `Transaction ${number} has been aborted: ${txn.abortReason}.`, TRANSIENT);
    }
  }

  async abort(owner: string, command: Document): Promise<void> {
    const state = this.#state(owner, command);
    const number = Number(command.txnNumber);
    const txn = state?.txn;
    if (!txn || txn.number !== number) {
      throw new CommandError('NoSuchTransaction', `Given transaction number ${number} does not match any in-progress transactions.`);
    }
    if (txn.state === 'committed' || txn.state === 'committing') {
      throw new CommandError('BadValue', `Transaction ${number} has been committed; it cannot be aborted.`);
    }
    this.#abort(txn, 'it was aborted');
    await txn.done.catch(() => {});
  }

  /** mongod aborts a transaction whose operation failed, even before it ran (a fail point). */
  abortFailed(owner: string, command: Document): void {
    if (command.autocommit !== false) return;
    const txn = this.#state(owner, command)?.txn;
    if (txn && txn.number === Number(command.txnNumber)) this.#abort(txn, 'an operation in it failed');
  }

  /** A retryable write's earlier reply, when this is a retry of it. */
  retried(owner: string, command: Document): Document | undefined {
    if (command.txnNumber === undefined || command.autocommit !== undefined) return undefined;
    const last = this.#state(owner, command)?.lastWrite;
    return last && last.txnNumber === Number(command.txnNumber) ? last.reply : undefined;
  }

  rememberWrite(owner: string, command: Document, reply: Document): void {
    if (command.txnNumber === undefined || command.autocommit !== undefined) return;
    const state = this.#state(owner, command);
    if (state) state.lastWrite = { txnNumber: Number(command.txnNumber), reply };
  }

  end(owner: string, lsids: unknown[]): void {
    for (const lsid of lsids) {
      const key = sessionKey(owner, lsid);
      const state = key ? this.#states.get(key) : undefined;
      if (!key || !state) continue;
      if (state.txn) this.#abort(state.txn, 'its session ended');
      this.#states.delete(key);
    }
  }

  /** Aborts every open transaction (the listener is closing). */
  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    clearInterval(this.#watchdog);
    const open = [...this.#states.values()].flatMap((s) => (s.txn ? [s.txn] : []));
    for (const txn of open) this.#abort(txn, 'the listener closed');
    this.#states.clear();
    await Promise.all(open.map((t) => t.done.catch(() => {})));
  }

  #sweep(): void {
    const limit = Date.now() - SESSION_IDLE_MS;
    for (const [key, state] of this.#states) {
      if (state.lastUsed < limit && (!state.txn || state.txn.state !== 'active')) this.#states.delete(key);
    }
  }
}
