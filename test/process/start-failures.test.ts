// A start that cannot succeed for a reason outside the code (a port taken, a server down, a file
// missing, a wrong option) stops at once with one line naming the setting and the cause, a non-zero
// exit status, no stack trace, and before any job is taken (docs/operate/deployment.md, "Start-up failures").
import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { runService, tempDataDir } from '../helpers/service-process.ts';

async function heldPort(t: ExecutionContext): Promise<number> {
  const holder: Server = createServer();
  await new Promise<void>((resolve) => holder.listen(0, resolve));
  t.teardown(() => void holder.close());
  return (holder.address() as AddressInfo).port;
}

/** Refused: the exit status, one line on stderr matching `message`, no stack trace, nothing started. */
async function refused(t: ExecutionContext, env: Record<string, string>, args: string[], status: number, message: RegExp) {
  const { code, stdout, stderr } = await runService({ DATA_DIR: tempDataDir(t), ...env }, args);
  t.is(code, status, stderr);
  t.regex(stderr, message);
  t.is(stderr.trim().split('\n').length, 1, `one line: ${stderr}`);
  t.notRegex(stderr, /^\s+at /m, 'no stack trace');
  t.notRegex(stdout, /"msg":"(listening|jobs started)"/, 'nothing started');
}

test('PORT held by another process', async (t) => {
  const port = await heldPort(t);
  await refused(t, { PORT: String(port) }, [], 1, new RegExp(`^PORT ${port}: cannot listen: .*EADDRINUSE`));
});

test('EMBEDDED_MONGO_PORT held by another process: refused before any job is taken', async (t) => {
  const port = await heldPort(t);
  await refused(t, { EMBEDDED_MONGO_PORT: String(port) }, [], 1, new RegExp(`^EMBEDDED_MONGO_PORT ${port} on EMBEDDED_MONGO_HOST 127\\.0\\.0\\.1: cannot listen: .*EADDRINUSE`));
});

test('EMBEDDED_MONGO_HOST that does not resolve', async (t) => {
  const port = await heldPort(t);
  await refused(t, { EMBEDDED_MONGO_PORT: String(port), EMBEDDED_MONGO_HOST: 'no-such-host.invalid' }, [], 1, /^EMBEDDED_MONGO_PORT \d+ on EMBEDDED_MONGO_HOST no-such-host\.invalid: cannot listen: .*ENOTFOUND/);
});

test('a --manifest file that does not exist', async (t) => {
  await refused(t, {}, ['--manifest', '/nonexistent/acme.yaml'], 2, /^Manifest \/nonexistent\/acme\.yaml cannot be read: ENOENT/);
});

test('an option src/main.ts does not know', async (t) => {
  await refused(t, {}, ['--manfest', 'acme.yaml'], 2, /^src\/main\.ts takes one option, --manifest FILE: Unknown option '--manfest'/);
});

test('a MONGODB_URI nothing answers at', async (t) => {
  const port = await heldPort(t);
  // The held port accepts and never speaks MongoDB: the driver's server selection times out.
  await refused(t, { MONGODB_URI: `mongodb://127.0.0.1:${port}/spend`, MONGODB_TIMEOUT_MS: '500' }, [], 1, /^MONGODB_URI: cannot use the database: /);
});

test('WEB_CONCURRENCY=2 with EMBEDDED_MONGO_PORT held: the primary stops at the first failed start instead of replacing it again and again', async (t) => {
  const port = await heldPort(t);
  const { code, stdout, stderr } = await runService({ DATA_DIR: tempDataDir(t), EMBEDDED_MONGO_PORT: String(port), WEB_CONCURRENCY: '2' });
  t.is(code, 1, stderr);
  t.regex(stderr, new RegExp(`EMBEDDED_MONGO_PORT ${port} on EMBEDDED_MONGO_HOST 127\\.0\\.0\\.1: cannot listen: .*EADDRINUSE`));
  t.notRegex(stderr, /^\s+at /m, 'no stack trace');
  t.regex(stdout, /"msg":"a web process failed to start; stopping"/);
  t.is((stdout.match(/"msg":"web process exited"/g) ?? []).length, 1, stdout);
});

test('a held PORT on a first start: refused before the store is opened, so the operator token is not generated, printed above the error and lost', async (t) => {
  const port = await heldPort(t);
  const dataDir = tempDataDir(t);
  for (const concurrency of ['1', '2']) {
    const { code, stdout, stderr } = await runService({ DATA_DIR: dataDir, PORT: String(port), ADMIN_TOKEN: '', WEB_CONCURRENCY: concurrency });
    t.is(code, 1, stderr);
    t.regex(stderr, new RegExp(`^PORT ${port}: cannot listen: .*EADDRINUSE`));
    t.notRegex(stdout, /Operator API token/);
    t.false(existsSync(dataDir), 'DATA_DIR untouched');
  }
});

test('a database another program keeps locked: refused after the busy timeout, with a message that says so', async (t) => {
  const dataDir = tempDataDir(t);
  const store = await openEmbeddedStore({ dataDir });
  await store.close();
  // Another program (an sqlite3 shell, say) with a write transaction open on the file.
  const holder = spawn(process.execPath, ['-e', `const { DatabaseSync } = require('node:sqlite'); new DatabaseSync(process.argv[1]).exec('BEGIN EXCLUSIVE'); console.log('locked'); setInterval(() => {}, 1000);`, join(dataDir, 'spend-control.db')], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => void holder.kill('SIGKILL'));
  await once(holder.stdout, 'data');
  const { code, stdout, stderr } = await runService({ DATA_DIR: dataDir });
  t.is(code, 2, stderr);
  t.regex(stderr, /^DATA_DIR: \S+spend-control\.db is locked by another program/);
  t.notRegex(stderr, /^\s+at /m, 'no stack trace');
  t.notRegex(stdout, /"msg":"listening"/);
});

test('a client connecting while the service starts (a platform probe) is turned away, and the start goes on', async (t) => {
  const probe: Server = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const service = spawn(process.execPath, ['src/main.ts'], { env: { ...process.env, PORT: String(port), DATA_DIR: tempDataDir(t), ADMIN_TOKEN: 'probe-admin-token-0123456789abcdef', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => void service.kill('SIGKILL'));
  let output = '';
  service.stdout.on('data', (d) => (output += d));
  service.stderr.on('data', (d) => (output += d));
  // Connections opened all along the start and left open, as a probe waiting for an answer leaves them.
  const open: Socket[] = [];
  t.teardown(() => open.forEach((s) => s.destroy()));
  for (let i = 0; !output.includes('"msg":"listening"'); i++) {
    if (service.exitCode !== null || i > 3000) return t.fail(`no start (exit ${service.exitCode}):\n${output}`);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    open.push(socket);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.is((await fetch(`http://127.0.0.1:${port}/health/live`)).status, 200);
});
