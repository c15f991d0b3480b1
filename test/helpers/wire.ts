// An in-process MongoDB wire-protocol listener over fresh embedded stores (one per database
// name), with both users, for tests that talk to it through real clients.
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { storePerDatabase, type Databases } from '../../src/store/wire/databases.ts';
import { mongoUrl } from '../../src/store/wire/embedded-listener.ts';
import { WireListener, type ListenerOptions } from '../../src/store/wire/listener.ts';
import { ANALYST_USER, MemoryUsers, SERVICE_USER } from '../../src/store/wire/users.ts';

export interface TestListener {
  listener: WireListener;
  databases: Databases;
  /** The service user's connection string for a database. */
  serviceUrl(database: string, query?: string): string;
  analystUrl(database: string): string;
  close(): Promise<void>;
}

export async function startListener(options: Partial<ListenerOptions> = {}): Promise<TestListener> {
  const users = new MemoryUsers();
  const service = users.set(SERVICE_USER);
  const analyst = users.set(ANALYST_USER);
  const databases = storePerDatabase((dbName) => openEmbeddedStore({ dbName, ttlSweepIntervalMs: 200 }));
  // Tests in one file run at once, each with its own client, and every client holds two monitoring
  // connections that never authenticate: under load more than the production cap of 32 wait at once,
  // and the oldest (a pool connection in its handshake) would be closed. The limits' own tests ask for
  // the cap they test.
  const listener = await WireListener.start({ databases, users, port: 0, testCommands: true, maxUnauthenticated: 256, ...options });
  const url = (user: string, password: string, database: string, query = '') =>
    mongoUrl(listener.host, listener.port, user, password, database) + (query ? `&${query}` : '');
  return {
    listener,
    databases,
    serviceUrl: (database, query) => url(SERVICE_USER, service, database, query),
    analystUrl: (database) => url(ANALYST_USER, analyst, database),
    async close() {
      await listener.close();
      await databases.close();
    },
  };
}
