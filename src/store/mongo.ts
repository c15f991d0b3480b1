// The Store on the official MongoDB driver (docs/internals/design.md §2 and §8).
import { MongoClient, type ClientSession, type Collection, type Db, type Document, type MongoClientOptions, type TransactionOptions } from 'mongodb';
import { hasErrorLabel, type Store, type StoreCollection, type StoreDb, type StoreTransactionOptions } from './store.ts';

export const DEFAULT_TIMEOUT_MS = 10_000;

export interface MongoStoreOptions {
  /** Required: the driver's fallback is a database called 'test' (config.ts resolves MONGODB_DB or the URI's path). */
  dbName: string;
  /** The deadline of every command (see deadlineOptions). */
  timeoutMs?: number;
  clientOptions?: MongoClientOptions;
}

/** A commit whose outcome is unknown (network error, failover) is retried this many times, never the body. */
const COMMIT_ATTEMPTS = 3;

/**
 * The deadline of every command. Driver 7.8 ignores a client-level `timeoutMS` (it warns "timeoutMS has
 * no effect"), so the deadline is made of the options that do act: no server to select, no free pooled
 * connection, no byte back on a socket (the monitor's too), and a commit's own time limit, each within `timeoutMs`.
 * runCommand bounds the attempts and their total time around that.
 */
export function deadlineOptions(timeoutMs: number): MongoClientOptions {
  return {
    serverSelectionTimeoutMS: timeoutMs,
    waitQueueTimeoutMS: timeoutMs,
    socketTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs, // also the server monitor's heartbeat socket timeout
  };
}

/** Where each read method takes its options. */
const READ_OPTIONS_AT: Readonly<Record<string, number>> = { find: 1, findOne: 1, aggregate: 1, countDocuments: 1, distinct: 2 };

/**
 * The collection, each of its reads sent with `maxTimeMS` (unless the caller set one): the server stops a read
 * at the deadline. The socket timeout only ends the driver's wait; without it the server would read on, a
 * collection scan or a huge $group for no one, while the request is answered 503 and retried.
 */
function withReadDeadline<T extends Document>(collection: Collection<T>, timeoutMs: number): StoreCollection<T> {
  return new Proxy(collection, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const at = typeof property === 'string' ? READ_OPTIONS_AT[property] : undefined;
      if (at === undefined) return value.bind(target);
      return (...args: unknown[]) => {
        args[at] = { maxTimeMS: timeoutMs, ...(args[at] as object | undefined) };
        return value.apply(target, args);
      };
    },
  });
}

export class MongoStore implements Store {
  readonly engine = 'mongodb' as const;
  readonly db: StoreDb;
  readonly client: MongoClient;

  readonly #transactionOptions: TransactionOptions;

  constructor(client: MongoClient, db: Db, timeoutMs = DEFAULT_TIMEOUT_MS) {
    this.client = client;
    // Snapshot reads and majority commits: a transaction reads one consistent, durable view.
    this.#transactionOptions = {
      readConcern: { level: 'snapshot' },
      writeConcern: { w: 'majority' },
      readPreference: 'primary',
      maxCommitTimeMS: timeoutMs,
    };
    this.db = {
      collection: <T extends Document>(name: string): StoreCollection<T> => withReadDeadline(db.collection<T>(name), timeoutMs),
      listCollectionNames: async () =>
        (await db.listCollections({}, { nameOnly: true }).toArray())
          .map((c) => c.name)
          .filter((name) => !name.startsWith('system.'))
          .sort(),
      createCollection: async (name) => {
        try {
          await db.createCollection(name);
        } catch (error) {
          // NamespaceExists: already there (another process created it first).
          if ((error as { code?: unknown }).code !== 48) throw error;
        }
      },
      bulkWrite: (models, options) => client.bulkWrite<Record<string, Document & { _id: string }>>(models, options),
      raw: db,
    };
  }

  /**
   * One attempt. Not the driver's session.withTransaction: that retries for up to 120 s whatever the
   * deadline, under our own retries. runCommand (src/commands/run-command.ts) owns the one bounded
   * retry budget, for TransientTransactionError (write conflicts) and our VersionConflict alike.
   */
  async withTransaction<T>(fn: (session: ClientSession) => Promise<T>, options: StoreTransactionOptions = {}): Promise<T> {
    const session = this.client.startSession();
    try {
      session.startTransaction(this.#transactionOptions);
      let result: T;
      try {
        result = await fn(session);
      } catch (error) {
        if (session.inTransaction()) await session.abortTransaction().catch(() => undefined);
        throw error;
      }
      for (let attempt = 1; ; attempt++) {
        try {
          await session.commitTransaction();
          options.onApplied?.();
          return result;
        } catch (error) {
          const unknown = hasErrorLabel(error, 'UnknownTransactionCommitResult') && (error as { codeName?: string }).codeName !== 'MaxTimeMSExpired';
          if (!unknown || attempt >= COMMIT_ATTEMPTS) throw error;
        }
      }
    } finally {
      await session.endSession();
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** The wire version of MongoDB 8.0, the first with the bulkWrite command (StoreDb.bulkWrite). */
export const MONGODB_8_WIRE_VERSION = 25;

/**
 * Connects, then refuses a standalone server (multi-document transactions need a replica set, or a
 * sharded cluster, whose mongos answers `hello` with msg 'isdbgrid') and a server older than 8.0.
 */
export async function openMongoStore(uri: string, options: MongoStoreOptions): Promise<MongoStore> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // Reads see the latest write (a purchase read back right after its 201): from the primary, whatever the URI says.
  // Writes outside a transaction (a session, a delivery's attempt, a job's lock) are acknowledged once a majority
  // has them, as the transactions' commits are: a failover must not undo what was answered as done.
  const writeConcern = { w: 'majority' as const, wtimeoutMS: timeoutMs };
  const client = await MongoClient.connect(uri, { ...deadlineOptions(timeoutMs), readPreference: 'primary', writeConcern, ...options.clientOptions });
  try {
    const hello = await client.db('admin').command({ hello: 1 });
    if (!hello.setName && hello.msg !== 'isdbgrid') {
      throw new Error(
        'MongoDB at MONGODB_URI is a standalone server: this service needs transactions, which need a replica set ' +
          '(or a sharded cluster). Start mongod with --replSet and run rs.initiate(), or use a replica-set URI.'
      );
    }
    if (!(hello.maxWireVersion >= MONGODB_8_WIRE_VERSION)) {
      throw new Error(
        'MongoDB at MONGODB_URI is older than 8.0: this service writes each decision with one bulkWrite command ' +
          '(MongoClient.bulkWrite), which MongoDB 8.0 introduced. Upgrade the server to 8.0 or later.'
      );
    }
  } catch (error) {
    await client.close();
    throw error;
  }
  return new MongoStore(client, client.db(options.dbName), timeoutMs);
}
