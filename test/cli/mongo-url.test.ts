// The web process on the embedded default with EMBEDDED_MONGO_PORT, and `npm run admin -- mongo-url`:
// the listener starts beside the service, the CLI prints a connection string with a new password
// (the old one stops working), and the users file keeps SCRAM keys only, readable by its owner only.
import test from 'ava';
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MongoClient, type MongoServerError } from 'mongodb';
import { portForChild } from '../../scripts/child-port.ts';
import { ANALYST_COLLECTIONS } from '../../src/store/wire/analyst-access.ts';

const run = promisify(execFile);

async function cli(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['scripts/admin.ts', ...args], { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err: any) {
    return { code: err.code as number, stdout: err.stdout as string, stderr: err.stderr as string };
  }
}

test('npm start with EMBEDDED_MONGO_PORT serves the store over the wire; mongo-url rotates and prints a working URL', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'mongo-url-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const mongoPort = await portForChild();
  const env = { DATA_DIR: dataDir, EMBEDDED_MONGO_PORT: String(mongoPort), PORT: '0', LOG_LEVEL: 'info', MONGODB_URI: '' };
  const web = spawn(process.execPath, ['src/main.ts'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => web.kill('SIGTERM'));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    web.stdout!.on('data', (chunk) => {
      output += chunk;
      if (output.includes('mongodb wire protocol listening')) resolve();
    });
    web.stderr!.on('data', (chunk) => (output += chunk));
    web.on('exit', (code) => reject(new Error(`the web process exited (${code}): ${output}`)));
  });
  t.true(output.includes('npm run admin -- mongo-url'), 'the log says how to get a connection string');

  const first = await cli(['mongo-url', '--analyst'], env);
  t.is(first.code, 0, first.stderr);
  const url = first.stdout.trim();
  t.regex(url, new RegExp(`^mongodb://analyst:[^@]+@127\\.0\\.0\\.1:${mongoPort}/spend-control\\?directConnection=true`));
  const analyst = await MongoClient.connect(url, { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => analyst.close());
  t.true((await analyst.db().listCollections().toArray()).some((c) => c.name === 'purchase_views'), 'the service created its collections');
  const refused = await analyst.db().collection('purchase_views').insertOne({ forged: true }).catch((e: MongoServerError) => e);
  t.is((refused as MongoServerError).code, 13);

  const file = join(dataDir, 'mongo-users.json');
  t.is((await stat(file)).mode & 0o777, 0o600);
  const password = decodeURIComponent(new URL(url).password);
  t.false((await readFile(file, 'utf8')).includes(password), 'only SCRAM keys are kept');

  const second = await cli(['mongo-url', '--analyst'], env);
  t.is(second.code, 0, second.stderr);
  t.not(second.stdout.trim(), url);
  const stale = await MongoClient.connect(url, { serverSelectionTimeoutMS: 3000 }).catch((e: MongoServerError) => e);
  t.is((stale as MongoServerError).code, 18, 'the previous password stopped working');
  const fresh = await MongoClient.connect(second.stdout.trim(), { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => fresh.close());
  t.is((await fresh.db().command({ ping: 1 })).ok, 1);

  const service = await cli(['mongo-url'], env);
  const writer = await MongoClient.connect(service.stdout.trim(), { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => writer.close());
  // A read model, as the service itself would write it: the analyst sees it.
  await writer.db().collection('policy_views').insertOne({ _id: 'n' } as never);
  t.is(await fresh.db().collection('policy_views').countDocuments({ _id: 'n' } as never), 1, 'the service user writes, the analyst sees it');
});

test("with DATA_DIR=:memory: the web process prints both users' URLs at start, and they work", async (t) => {
  const env = { DATA_DIR: ':memory:', EMBEDDED_MONGO_PORT: String(await portForChild()), PORT: '0', MONGODB_URI: '' };
  const web = spawn(process.execPath, ['src/main.ts'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => web.kill('SIGTERM'));
  let output = '';
  const urls = await new Promise<Record<string, string>>((resolve, reject) => {
    web.stdout!.on('data', (chunk) => {
      output += chunk;
      const found = Object.fromEntries([...output.matchAll(/^\s+(service|analyst): (mongodb:\S+)$/gm)].map((m) => [m[1], m[2]]));
      if (found.service && found.analyst) resolve(found);
    });
    web.on('exit', (code) => reject(new Error(`the web process exited (${code}): ${output}`)));
  });
  const analyst = await MongoClient.connect(urls.analyst, { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => analyst.close());
  const listed = (await analyst.db().listCollections().toArray()).map((c) => c.name).sort();
  t.deepEqual(listed, [...ANALYST_COLLECTIONS].sort(), 'the analyst lists the read models, and only them');
  const service = await MongoClient.connect(urls.service, { serverSelectionTimeoutMS: 5000 });
  t.teardown(() => service.close());
  await service.db().collection('policy_views').insertOne({ note: 'from the service user' });
  t.is(await analyst.db().collection('policy_views').countDocuments({ note: 'from the service user' }), 1);
});

test('mongo-url explains itself when the listener is off or the users live in memory', async (t) => {
  const off = await cli(['mongo-url'], { EMBEDDED_MONGO_PORT: '', DATA_DIR: '/nonexistent' });
  t.is(off.code, 2);
  t.regex(off.stderr, /EMBEDDED_MONGO_PORT is not set/);
  const memory = await cli(['mongo-url', '--analyst'], { EMBEDDED_MONGO_PORT: '27018', DATA_DIR: ':memory:' });
  t.is(memory.code, 2);
  t.regex(memory.stderr, /printed them at start/);
});
