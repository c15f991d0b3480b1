// The same source runs under Deno (docs/internals/design.md §7): boot the service with the `deno` npm package's
// binary on the embedded engine with a file-backed DATA_DIR, apply a manifest, list agents and get a
// real purchase decision, whose receipt verifies.
import test from 'ava';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { createPublicKey, verify } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { acmeManifest } from '../helpers/fixtures.ts';
import { listeningPort } from '../helpers/service-process.ts';

const DENO = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOKEN = 'deno-admin-token-0123456789abcdef';

test('under Deno: GET /v1/agents answers 200 and a purchase is decided', async (t) => {
  const temp = mkdtempSync(join(tmpdir(), 'deno-data-'));
  t.teardown(() => rmSync(temp, { recursive: true, force: true }));
  const dataDir = join(temp, 'data');
  // As docs/operate/deployment.md says: with an empty module cache (a fresh clone), Deno 2.9's first
  // start stalled while loading npm packages in about 4 of 10 trials; filled first, 10 of 10 started.
  await promisify(execFile)(DENO, ['cache', 'src/main.ts'], { cwd: ROOT, timeout: 120_000 });
  const child = spawn(DENO, ['run', '--allow-all', 'src/main.ts'], { cwd: ROOT, env: { ...process.env, PORT: '0', ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'info', DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  try {
    const deadline = Date.now() + 90_000;
    let port: number | undefined;
    while (port === undefined || !(await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false))) {
      if (Date.now() > deadline || child.exitCode !== null) return t.fail(`Deno did not start (exit ${child.exitCode}, signal ${child.signalCode}):\n${output}`);
      port ??= listeningPort(output);
      await sleep(250);
    }
    const base = `http://127.0.0.1:${port}`;
    const applied = await fetch(`${base}/admin/manifests`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(acmeManifest('deno')) }).then((r) => r.json() as Promise<any>);
    const agents = await fetch(`${base}/v1/agents`, { headers: { authorization: `Bearer ${applied.apiKeys['admin-key'].key}` } });
    t.is(agents.status, 200);
    t.is(((await agents.json()) as any).agents.length, 2);
    const decided = await fetch(`${base}/v1/purchase-requests`, {
      method: 'POST',
      headers: { authorization: `Bearer ${applied.apiKeys['buyer-key'].key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ merchant: 'Paper Co', amountMinor: '1999', reason: 'paper' }),
    });
    t.is(decided.status, 201);
    const body = (await decided.json()) as any;
    t.is(body.decision.outcome, 'APPROVED');
    t.deepEqual(body.decision.reasonCodes, ['WITHIN_POLICY']);
    // The decision's receipt, signed under Deno's node:crypto, verifies with Node's against the JWKS it serves.
    const jwks = (await fetch(`${base}/.well-known/jwks.json`).then((r) => r.json())) as { keys: { kid: string }[] };
    const receipt = decided.headers.get('decision-receipt') ?? '';
    const [header, payload, signature] = receipt.split('.');
    const kid = JSON.parse(Buffer.from(header, 'base64url').toString()).kid;
    const jwk = jwks.keys.find((k) => k.kid === kid);
    t.truthy(jwk, 'the receipt names a key of the JWKS');
    t.true(verify(null, Buffer.from(`${header}.${payload}`), createPublicKey({ key: jwk as never, format: 'jwk' }), Buffer.from(signature, 'base64url')));
    t.is(JSON.parse(Buffer.from(payload, 'base64url').toString()).decisionId, body.decision.id);
    t.true(existsSync(join(dataDir, 'spend-control.db')), 'the store lives in DATA_DIR');
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
});
