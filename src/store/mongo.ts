// The Store on the official MongoDB driver (DESIGN.md sections 2 and 8).
import { MongoClient, type ClientSession, type Db, type Document, type MongoClientOptions, type TransactionOptions } from 'mongodb';
import type { Store, StoreCollection, StoreDb } from './store.ts';

export interface MongoStoreOptions {
  /** Defaults to the database named in the URI (or the driver's default, 'test'). */
  dbName?: string;
  clientOptions?: MongoClientOptions;
}

// Snapshot reads and majority commits: a transaction reads one consistent, durable view.
const transactionOptions: TransactionOptions = {
  readConcern: { level: 'snapshot' },
  writeConcern: { w: 'majority' },
  readPreference: 'primary',
};

export class MongoStore implements Store {
  readonly engine = 'mongodb' as const;
  readonly db: StoreDb;
  readonly client: MongoClient;

  constructor(client: MongoClient, db: Db) {
    this.client = client;
    this.db = {
      collection: <T extends Document>(name: string): StoreCollection<T> => db.collection<T>(name),
      listCollectionNames: async () =>
        (await db.listCollections({}, { nameOnly: true }).toArray())
          .map((c) => c.name)
          .filter((name) => !name.startsWith('system.'))
          .sort(),
      raw: db,
    };
  }

  async withTransaction<T>(fn: (session: ClientSession) => Promise<T>): Promise<T> {
    const session = this.client.startSession();
    try {
      // The driver retries the callback on TransientTransactionError and the commit on
      // UnknownTransactionCommitResult; any other error aborts the transaction and is rethrown.
      return await session.withTransaction(fn, transactionOptions);
    } finally {
      await session.endSession();
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/**
 * Connects, then refuses a standalone server: multi-document transactions need a replica set
 * (or a sharded cluster, whose mongos answers `hello` with msg 'isdbgrid').
 */
export async function openMongoStore(uri: string, options: MongoStoreOptions = {}): Promise<MongoStore> {
  const client = await MongoClient.connect(uri, options.clientOptions);
  try {
    const hello = await client.db('admin').command({ hello: 1 });
    if (!hello.setName && hello.msg !== 'isdbgrid') {
      throw new Error(
        'MongoDB at MONGODB_URI is a standalone server: this service needs transactions, which need a replica set ' +
          '(or a sharded cluster). Start mongod with --replSet and run rs.initiate(), or use a replica-set URI.'
      );
    }
  } catch (error) {
    await client.close();
    throw error;
  }
  return new MongoStore(client, client.db(options.dbName));
}
