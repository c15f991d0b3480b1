// Graceful shutdown of the real web process (`node src/main.ts`, and the same under Deno): on SIGTERM
// it stops accepting connections, finishes the request in flight, stops its jobs, closes the store and
// exits 0 within the 30 s a platform allows.
import test from 'ava';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acmeManifest } from '../helpers/fixtures.ts';
import { listeningPort } from '../helpers/service-process.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ADMIN_TOKEN = 'shutdown-admin-token-0123456789';

const DENO = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
const RUNTIMES = { Node: [process.execPath, 'src/main.ts'], Deno: [DENO, 'run', '--allow-all', 'src/main.ts'] };

// Deno's module cache filled first (docs/operate/deployment.md, "Under Deno").
test.before(() => promisify(execFile)(DENO, ['cache', 'src/main.ts'], { cwd: ROOT, timeout: 300_000 }));

for (const [runtime, [command, ...args]] of Object.entries(RUNTIMES)) test(`SIGTERM under ${runtime}: no new connections, the request in flight completes, the process exits 0 in time`, async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'shutdown-'));
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', ADMIN_TOKEN, LOG_LEVEL: 'info', DATA_DIR: dataDir, NODE_ENV: 'development' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (const w of waiters.filter((w) => w.pattern.test(stdout))) w.resolve();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => t.log(chunk.trim()));
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  const printed = (pattern: RegExp) => (pattern.test(stdout) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ pattern, resolve })));
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  await printed(/"msg":"listening"/);
  const port = listeningPort(stdout)!;
  const base = `http://127.0.0.1:${port}`;
  const applied = await fetch(`${base}/admin/manifests`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(acmeManifest('shutdown')),
  }).then((r) => r.json() as Promise<any>);
  const key = applied.apiKeys['buyer-key'].key as string;

  // A purchase whose body is only half sent: the request is in flight when SIGTERM arrives.
  const body = Buffer.from(JSON.stringify({ merchant: 'Paper Co', amountMinor: '1999', reason: 'Printer paper' }));
  const inFlight = httpRequest(`${base}/v1/purchase-requests`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(body.length) },
  });
  const answered = once(inFlight, 'response') as Promise<[IncomingMessage]>;
  inFlight.write(body.subarray(0, 10));
  // Another request answered after the first bytes were written: the server has read them.
  t.is((await fetch(`${base}/health/live`)).status, 200);

  const signalledAt = Date.now();
  child.kill('SIGTERM');
  await printed(/"msg":"stopping"/);
  await t.throwsAsync(fetch(`${base}/health/live`), undefined, 'a new connection is refused once stopping');

  inFlight.end(body.subarray(10));
  const [res] = await answered;
  let text = '';
  for await (const chunk of res) text += chunk;
  t.is(res.statusCode, 201, text);
  t.is(JSON.parse(text).decision.outcome, 'APPROVED');
  t.is(res.headers.connection, 'close');

  const [code] = await exited;
  t.is(code, 0);
  t.true(Date.now() - signalledAt < 30_000, 'exited within the 30 s a platform allows');
  t.regex(stdout, /"msg":"stopped"/);
});
