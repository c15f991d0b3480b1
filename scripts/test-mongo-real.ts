// `npm run test:mongo:real`: the driver lane (scripts/test-mongo.ts: the store conformance suite and the
// whole test suite through the official driver) against a real MongoDB, a one-member replica set
// (transactions need one) started by mongodb-memory-server on a private port and thrown away after.
// mongod is MONGOMS_SYSTEM_BINARY when set, else the binary mongodb-memory-server downloads at run time
// (never at install: package.json's config.mongodbMemoryServer.disablePostinstall) into its cache.
// Where no mongod can be had it says so in one line and exits 1. Not part of .ci/run: CI's driver lane
// runs against MONGODB_URI or the embedded wire-protocol listener.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MongoMemoryReplSet } from 'mongodb-memory-server';

const testMongo = fileURLToPath(new URL('./test-mongo.ts', import.meta.url));

let replSet: MongoMemoryReplSet;
// mongodb-memory-server writes each failed start to console.warn with its stack, once per instance: the
// failure is told below, once.
const warn = console.warn;
console.warn = () => {};
try {
  replSet = await MongoMemoryReplSet.create({ replSet: { count: 1, storageEngine: 'wiredTiger' } });
} catch (error) {
  const { url, msg, message } = error as { url?: string; msg?: string; message?: string };
  const reason = url && msg ? `downloading ${url}: ${msg}` : String(message ?? error).split('\n')[0];
  process.stderr.write(`test:mongo:real: no mongod could be had (set MONGOMS_SYSTEM_BINARY to a mongod 7 or 8, or allow the download): ${reason}\n`);
  process.exit(1);
} finally {
  console.warn = warn;
}

let exitCode = 1;
try {
  const uri = replSet.getUri();
  exitCode = await new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, [testMongo, ...process.argv.slice(2)], { stdio: 'inherit', env: { ...process.env, MONGODB_URI: uri } });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
} finally {
  await replSet.stop();
}
process.exit(exitCode);
