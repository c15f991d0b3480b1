// An unusable DATA_DIR stops the start with a message naming the path and the problem, and
// touches nothing; a usable one is created private (0700, database 0600) and named in the log.
import test from 'ava';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { runService, tempDataDir } from '../helpers/service-process.ts';

/** Every entry under path with its mode, size and content hash. */
function snapshot(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (p: string) => {
    const st = statSync(p);
    out[p] = `${(st.mode & 0o7777).toString(8)} ${st.size} ${st.isFile() ? createHash('sha256').update(readFileSync(p)).digest('hex') : 'dir'}`;
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
  };
  walk(path);
  return out;
}

async function refused(t: import('ava').ExecutionContext, dataDir: string, watched: string, problem: RegExp, named: string) {
  const before = snapshot(watched);
  const { code, stdout, stderr } = await runService({ DATA_DIR: dataDir });
  t.is(code, 2, stderr);
  t.true(stderr.includes(named), `the message names ${named}: ${stderr}`);
  t.regex(stderr, problem);
  t.notRegex(stdout, /listening/);
  t.deepEqual(snapshot(watched), before, 'nothing was written');
}

test('a file where DATA_DIR should be', async (t) => {
  const dataDir = tempDataDir(t);
  writeFileSync(dataDir, 'not a directory');
  await refused(t, dataDir, dataDir, /is not a directory/, dataDir);
});

test('a DATA_DIR that is not writable', async (t) => {
  const dataDir = tempDataDir(t);
  mkdirSync(dataDir, { mode: 0o500 });
  chmodSync(dataDir, 0o500);
  t.teardown(() => chmodSync(dataDir, 0o700));
  await refused(t, dataDir, dataDir, /is not writable/, dataDir);
});

test('a database written by a newer schema version', async (t) => {
  const dataDir = tempDataDir(t);
  const store = await openEmbeddedStore({ dataDir });
  await store.db.collection<{ _id: string; handle: string }>('organizations').insertOne({ _id: 'o', handle: 'kept' });
  await store.close();
  const file = join(dataDir, 'spend-control.db');
  const db = new DatabaseSync(file);
  db.exec('PRAGMA user_version = 99');
  db.close();
  await refused(t, dataDir, dataDir, /newer version of this service \(schema version 99/, file);
});

test('a corrupt database file', async (t) => {
  const dataDir = tempDataDir(t);
  mkdirSync(dataDir, { mode: 0o700 });
  const file = join(dataDir, 'spend-control.db');
  writeFileSync(file, 'this is not an SQLite database, just text that got here somehow\n'.repeat(200), { mode: 0o600 });
  await refused(t, dataDir, dataDir, /is not a readable database \(corrupt or not SQLite\)/, file);
});

test('a fresh DATA_DIR is created private, the log names the file, and the generated admin token is kept and printed once', async (t) => {
  const dataDir = tempDataDir(t);
  const first = await runOnce(dataDir);
  t.is(statSync(dataDir).mode & 0o777, 0o700);
  const file = join(dataDir, 'spend-control.db');
  t.true(existsSync(file));
  t.is(statSync(file).mode & 0o777, 0o600);
  t.true(first.includes(file), 'the start-up log names the database file');
  const token = /Operator API token \(generated, kept in [^)]+\): (\S+)/.exec(first)?.[1];
  t.truthy(token, first);
  t.regex(first, /Webhook signing secrets are sealed with a generated key, kept in/);
  const second = await runOnce(dataDir);
  t.false(second.includes('Operator API token'), 'printed only when created');
  const store = await openEmbeddedStore({ dataDir });
  t.teardown(() => store.close());
  t.is((await store.secret('admin-token', () => 'another')).value, token!, 'the same token is used at the next start');
});

/** Starts the service without ADMIN_TOKEN, waits for it to listen, stops it; returns its output. */
async function runOnce(dataDir: string): Promise<string> {
  const { spawn } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  // Port 0: the HTTP port is not used here, and one picked in advance could be taken meanwhile.
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  delete env.ADMIN_TOKEN;
  const child = spawn(process.execPath, ['src/main.ts'], { cwd: fileURLToPath(new URL('../..', import.meta.url)), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr.on('data', (d) => (output += d));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      output += d;
      if (output.includes('"msg":"listening"')) resolve();
    });
    child.once('exit', () => reject(new Error(`exited before listening:\n${output}`)));
  });
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  return output;
}
