// Starts the wire-protocol listener beside the embedded store when EMBEDDED_MONGO_PORT asks for
// it, and builds its connection strings (the web process and `npm run admin -- mongo-url`).
import type { Config } from '../../config.ts';
import type { Logger } from '../../log.ts';
import type { Store } from '../store.ts';
import { singleDatabase } from './databases.ts';
import { WireListener } from './listener.ts';
import { isLoopbackAddress } from '../../loopback.ts';
import { ANALYST_USER, FileUsers, MemoryUsers, SERVICE_USER, usersFilePath } from './users.ts';

export function mongoUrl(host: string, port: number, user: string, password: string, database: string): string {
  const address = host.includes(':') ? `[${host}]` : host;
  const query = 'directConnection=true&authSource=admin&authMechanism=SCRAM-SHA-256';
  return `mongodb://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${address}:${port}/${encodeURIComponent(database)}?${query}`;
}

/** Null when EMBEDDED_MONGO_PORT is not set. `print` shows what a person needs once. */
export async function startEmbeddedListener(store: Store, config: Config, log: Logger, print: (text: string) => void): Promise<WireListener | null> {
  const listener = await startListener(store, config, log, print);
  // The bound address, not EMBEDDED_MONGO_HOST: a name such as localhost is judged by what it resolved to.
  if (listener && !isLoopbackAddress(listener.host)) {
    log.warn('the mongodb wire protocol listener is reachable from the network, without TLS: what it serves crosses the network in the clear', {
      host: config.embeddedMongoHost,
      address: listener.host,
      port: listener.port,
      advice: 'keep EMBEDDED_MONGO_HOST=127.0.0.1 and reach it through an SSH tunnel (docs/operate/wire-protocol.md)',
    });
  }
  return listener;
}

async function startListener(store: Store, config: Config, log: Logger, print: (text: string) => void): Promise<WireListener | null> {
  if (config.embeddedMongoPort === null) return null;
  const database = store.db.raw.databaseName;
  const host = config.embeddedMongoHost;
  const port = config.embeddedMongoPort;
  if (config.dataDir === ':memory:') {
    // Nothing outlives the process, so its passwords are shown now or never.
    const users = new MemoryUsers();
    const service = users.set(SERVICE_USER);
    const analyst = users.set(ANALYST_USER);
    const listener = await WireListener.start({ databases: singleDatabase(store), users, host, port });
    print(
      `MongoDB wire protocol on ${host}:${listener.port} (passwords generated for this process):\n` +
        `  service: ${mongoUrl(host, listener.port, SERVICE_USER, service, database)}\n` +
        `  analyst: ${mongoUrl(host, listener.port, ANALYST_USER, analyst, database)}\n`,
    );
    return listener;
  }
  const users = new FileUsers(usersFilePath(config.dataDir));
  users.ensure();
  const listener = await WireListener.start({ databases: singleDatabase(store), users, host, port });
  log.info('mongodb wire protocol listening', { host, port: listener.port, users: users.path, connectionString: 'npm run admin -- mongo-url [--analyst]' });
  return listener;
}

/** `npm run admin -- mongo-url [--analyst]`: a new password for the user, shown once in its URL. */
export function rotateMongoUrl(config: Config, analyst: boolean, database = 'spend-control'): string {
  if (config.embeddedMongoPort === null) throw new Error('EMBEDDED_MONGO_PORT is not set: the wire-protocol listener is off');
  if (config.dataDir === ':memory:') {
    throw new Error("DATA_DIR is ':memory:': the listener's passwords live in the web process, which printed them at start");
  }
  const user = analyst ? ANALYST_USER : SERVICE_USER;
  const password = new FileUsers(usersFilePath(config.dataDir)).rotate(user);
  return mongoUrl(config.embeddedMongoHost, config.embeddedMongoPort, user, password, database);
}
