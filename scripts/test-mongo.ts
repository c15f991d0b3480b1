// `npm run test:mongo`: runs the store conformance suite and the whole normal test suite through
// the official driver (src/store/mongo.ts) and Agenda's Mongo backend (docs/internals/design.md §2):
// against MONGODB_URI when set, otherwise against this project's MongoDB wire-protocol listener
// (src/store/wire/) over a fresh store per database, started here in this process.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { openStore } from '../src/store/open-store.ts';
import { storePerDatabase } from '../src/store/wire/databases.ts';
import { mongoUrl } from '../src/store/wire/embedded-listener.ts';
import { WireListener } from '../src/store/wire/listener.ts';
import { MemoryUsers, SERVICE_USER } from '../src/store/wire/users.ts';

const projectDir = fileURLToPath(new URL('..', import.meta.url));
const avaCli = fileURLToPath(new URL('../node_modules/ava/entrypoints/cli.js', import.meta.url));

function redact(uri: string): string {
  return uri.replace(/\/\/([^:@/]+):([^@/]*)@/, '//$1:***@');
}

interface Server {
  uri: string;
  description: string;
  stop(): Promise<void>;
}

async function startServer(): Promise<Server> {
  const fromEnv = process.env.MONGODB_URI;
  if (fromEnv) return { uri: fromEnv, description: `MONGODB_URI (${redact(fromEnv)})`, stop: async () => {} };
  // The listener's stores, like the tests' own, keep nothing on disk.
  process.env.DATA_DIR ??= ':memory:';
  const users = new MemoryUsers();
  const password = users.set(SERVICE_USER);
  const databases = storePerDatabase((dbName) => openStore({ dbName }));
  // The whole suite is one user's: no per-user cap below the listener's own. And its test processes
  // open their pools all at once, each connection unauthenticated until its handshake ends: no cap on
  // those below the listener's own either, and a handshake deadline for clients that share two loaded
  // cores with it (the limits' own tests start listeners of their own).
  const listener = await WireListener.start({ databases, users, port: 0, testCommands: true, maxConnectionsPerUser: 256, maxUnauthenticated: 256, handshakeTimeoutMs: 60_000 });
  const uri = mongoUrl(listener.host, listener.port, SERVICE_USER, password, '');
  return {
    uri,
    description: `the embedded store's wire-protocol listener (${redact(uri)})`,
    stop: async () => {
      await listener.close();
      await databases.close();
    },
  };
}

/** Makes TTL tests quick where the server allows it (MongoDB's default monitor period is 60 s). */
async function tuneTtlMonitor(uri: string): Promise<void> {
  const client = await MongoClient.connect(uri, { serverSelectionTimeoutMS: 10_000 });
  try {
    const hello = await client.db('admin').command({ hello: 1 });
    const version = await client.db('admin').command({ buildInfo: 1 });
    console.log(`test:mongo: server reports MongoDB ${version.version} (build ${version.gitVersion}), ${hello.setName ? `replica set ${hello.setName}` : hello.msg === 'isdbgrid' ? 'sharded cluster' : 'standalone'}`);
    await client.db('admin').command({ setParameter: 1, ttlMonitorSleepSecs: 1 }).catch(() => {
      console.log('test:mongo: could not lower ttlMonitorSleepSecs; the TTL test may wait up to a minute');
    });
  } finally {
    await client.close();
  }
}

function runAva(configFile: string, uri: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [avaCli, '--config', configFile, ...process.argv.slice(2)], {
      cwd: projectDir,
      stdio: 'inherit',
      env: { ...process.env, TEST_MONGODB_URI: uri },
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const server = await startServer();
let exitCode = 1;
const configDir = await mkdtemp(join(tmpdir(), 'test-mongo-'));
try {
  console.log(`test:mongo: engine mongodb, against ${server.description}`);
  await tuneTtlMonitor(server.uri);
  // The package.json ava config plus the MongoDB conformance suite, which `npm test` leaves out.
  const configFile = join(configDir, 'ava.config.mjs');
  const config = {
    extensions: ['ts'],
    files: ['test/**/*.test.ts', 'test/store/mongodb.mongo.ts'],
    timeout: '2m',
    workerThreads: false,
  };
  await writeFile(configFile, `export default ${JSON.stringify(config)};\n`);
  exitCode = await runAva(configFile, server.uri);
} finally {
  await server.stop();
  await rm(configDir, { recursive: true, force: true });
}
process.exit(exitCode);
