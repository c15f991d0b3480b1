// Chooses the storage engine (DESIGN.md section 2): MongoDB when a URI is configured, the
// embedded engine otherwise. Nothing connects until this is called.
import { openEmbeddedStore } from './embedded/embedded-store.ts';
import { openMongoStore } from './mongo.ts';
import type { Store } from './store.ts';

export interface OpenStoreOptions {
  mongodbUri?: string;
  dbName?: string;
  /** The embedded store's directory; ':memory:' (the default here) keeps nothing. */
  dataDir?: string;
  synchronous?: 'NORMAL' | 'FULL';
}

export async function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  if (options.mongodbUri) return openMongoStore(options.mongodbUri, { dbName: options.dbName });
  return openEmbeddedStore({ dbName: options.dbName, dataDir: options.dataDir, synchronous: options.synchronous });
}
