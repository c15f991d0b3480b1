// Chooses the storage engine (docs/internals/design.md §2): MongoDB when a URI is configured, the
// embedded engine otherwise. Nothing connects until this is called.
import { openEmbeddedStore } from './embedded/embedded-store.ts';
import { openMongoStore } from './mongo.ts';
import type { Store } from './store.ts';

export interface OpenStoreOptions {
  mongodbUri?: string;
  /** Required with mongodbUri (config.ts refuses to start without MONGODB_DB or a database in the URI). */
  dbName?: string;
  /** The driver's deadline for every command (MONGODB_TIMEOUT_MS). */
  timeoutMs?: number;
  /** The embedded store's directory; ':memory:' (the default here) keeps nothing. */
  dataDir?: string;
  synchronous?: 'NORMAL' | 'FULL';
}

export async function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  if (options.mongodbUri) {
    if (!options.dbName) throw new Error('openStore: a MongoDB store needs a database name (MONGODB_DB)');
    return openMongoStore(options.mongodbUri, { dbName: options.dbName, timeoutMs: options.timeoutMs });
  }
  return openEmbeddedStore({ dbName: options.dbName, dataDir: options.dataDir, synchronous: options.synchronous });
}
