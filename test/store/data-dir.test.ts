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

/** Every file of the data directory (database, WAL, shared memory), as bytes read as Latin-1. */
const filesOf = (dataDir: string) => readdirSync(dataDir).map((name) => readFileSync(join(dataDir, name)).toString('latin1')).join('\n');

test('a fresh DATA_DIR is created private, the log names the file, and the generated admin token is printed once and kept only as a digest', async (t) => {
  const dataDir = tempDataDir(t);
  const first = await runOnce(dataDir);
  t.is(statSync(dataDir).mode & 0o777, 0o700);
  const file = join(dataDir, 'spend-control.db');
  t.true(existsSync(file));
  t.is(statSync(file).mode & 0o777, 0o600);
  t.true(first.output.includes(file), 'the start-up log names the database file');
  const token = /Operator API token \(generated, shown this once; only its digest is kept, in [^)]+\): (\S+)/.exec(first.output)?.[1];
  t.truthy(token, first.output);
  t.is(first.admin(token!), 404, 'the printed token opens the operator API');
  t.regex(first.output, /Webhook signing secrets are sealed with a generated key, kept in/);
  const second = await runOnce(dataDir, [token!, `${token!.slice(0, -1)}${token!.endsWith('x') ? 'y' : 'x'}`]);
  t.false(second.output.includes('Operator API token'), 'printed only when created');
  t.is(second.admin(token!), 404, 'the same token opens the operator API at the next start');
  t.is(second.admin(`${token!.slice(0, -1)}${token!.endsWith('x') ? 'y' : 'x'}`), 401);
  // A credential at rest is a digest: the token is in none of the store's files, in any form.
  const files = filesOf(dataDir);
  t.false(files.includes(token!), 'the token is not stored');
  t.true(files.includes(createHash('sha256').update(token!).digest('hex')), 'its digest is');
});

test('an admin token an earlier version kept in plain text is replaced by its digest, and goes on working', async (t) => {
  const dataDir = tempDataDir(t);
  const legacy = 'legacy-plain-admin-token-0123456789';
  const store = await openEmbeddedStore({ dataDir });
  await store.secret('admin-token', () => legacy);
  await store.close();
  t.true(filesOf(dataDir).includes(legacy), 'the old layout, as the earlier version left it');
  const started = await runOnce(dataDir, [legacy]);
  t.false(started.output.includes('Operator API token'), 'no new token is made or printed');
  t.is(started.admin(legacy), 404, 'the token the operator has opens the operator API');
  t.false(filesOf(dataDir).includes(legacy), 'and is no longer stored');
});

test('a worker started first on a fresh DATA_DIR makes no operator token: npm start, which serves the operator API, makes and prints it', async (t) => {
  const dataDir = tempDataDir(t);
  const worker = await startWithoutToken('src/worker/main.ts', dataDir, '"msg":"jobs started"');
  worker.child.kill('SIGTERM');
  await new Promise((resolve) => worker.child.once('exit', resolve));
  t.false(worker.output().includes('Operator API token'), worker.output());
  const web = await runOnce(dataDir);
  const token = /Operator API token \(generated, shown this once; [^)]+\): (\S+)/.exec(web.output)?.[1];
  t.truthy(token, web.output);
  t.is(web.admin(token!), 404, 'the printed token opens the operator API');
});

/** Starts `entry` (the web process or the worker) on dataDir without ADMIN_TOKEN; resolves once it has printed `line`. */
async function startWithoutToken(entry: string, dataDir: string, line: string) {
  const { spawn } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  // Port 0: the HTTP port is not used here, and one picked in advance could be taken meanwhile.
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  delete env.ADMIN_TOKEN;
  const child = spawn(process.execPath, [entry], { cwd: fileURLToPath(new URL('../..', import.meta.url)), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr.on('data', (d) => (output += d));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      output += d;
      if (output.includes(line)) resolve();
    });
    child.once('exit', () => reject(new Error(`exited before printing ${line}:\n${output}`)));
  });
  return { child, output: () => output };
}

/**
 * Starts the service without ADMIN_TOKEN, waits for it to listen, stops it; returns its output and what
 * the operator API answered, while it ran, to the token it printed and to each of `tokens`: 404 for a
 * purchase it does not know when the token is right, 401 when it is not.
 */
async function runOnce(dataDir: string, tokens: string[] = []): Promise<{ output: string; admin: (token: string) => number }> {
  const started = await startWithoutToken('src/main.ts', dataDir, '"msg":"listening"');
  const { child } = started;
  const output = started.output();
  const port = Number(/"msg":"listening","port":(\d+)/.exec(output)?.[1]);
  const printed = /Operator API token \([^)]*\): (\S+)/.exec(output)?.[1];
  const tried = new Map<string, number>();
  for (const token of [printed, ...tokens]) {
    if (token === undefined) continue;
    const res = await fetch(`http://127.0.0.1:${port}/admin/purchase-requests/no-such-purchase`, { headers: { authorization: `Bearer ${token}` } });
    tried.set(token, res.status);
  }
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  return { output: started.output(), admin: (token) => tried.get(token) ?? NaN };
}
