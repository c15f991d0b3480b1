// SIGTERM to the worker process (`node src/worker/main.ts`) while a webhook delivery is in progress:
// the delivery finishes and is recorded, the worker stops as soon as it has, and says whether it had
// to cut anything off (docs/operate/deployment.md, "Shutdown"). And SIGTERM while a process starts.
import test from 'ava';
import { spawn } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { acmeManifest } from '../helpers/fixtures.ts';
import { createTestPki } from '../helpers/https-receiver.ts';
import { startService, tempDataDir } from '../helpers/service-process.ts';

test('SIGTERM during a webhook delivery: it is delivered once and recorded, and the worker stops without waiting out the drain', async (t) => {
  const pki = await createTestPki();
  t.teardown(() => pki.cleanup());
  // A receiver that holds each request until the test answers it.
  const held: { id: string; res: ServerResponse }[] = [];
  const receiver = createServer({ key: pki.trusted.key, cert: pki.trusted.cert }, (req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => held.push({ id: JSON.parse(body).id, res }));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    receiver.closeAllConnections();
    receiver.close();
  });

  const dataDir = tempDataDir(t);
  const env = { NODE_EXTRA_CA_CERTS: pki.caPath, WEBHOOK_UNSAFE_ALLOW_LOCAL: '1', JOBS_PROCESS_EVERY: '1 second' };
  const web = await startService(t, dataDir, { ...env, RUN_JOBS: '0' });
  t.teardown(() => web.stop('SIGTERM'));
  const applied = await web.admin('/admin/manifests', acmeManifest('stop'));
  const admin: string = applied.body.apiKeys['admin-key'].key;
  const url = `https://localhost:${(receiver.address() as AddressInfo).port}/hook`;
  const hook = await web.request('/v1/webhooks', { key: admin, body: { url, subscribedTypes: ['purchase.approved'] } });
  t.is(hook.status, 201, JSON.stringify(hook.body));
  const bought = await web.request('/v1/purchase-requests', { key: applied.body.apiKeys['buyer-key'].key, body: { merchant: 'Paper Co', amountMinor: '1999', reason: 'paper' } });
  t.is(bought.status, 201);

  const worker = spawn(process.execPath, ['src/worker/main.ts'], { env: { ...process.env, ...env, DATA_DIR: dataDir, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  worker.stdout.on('data', (d) => (output += d));
  worker.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => worker.once('exit', resolve));
  t.teardown(() => void worker.kill('SIGKILL'));
  while (held.length === 0) {
    if (worker.exitCode !== null) t.fail(output);
    await sleep(50);
  }

  worker.kill('SIGTERM');
  while (!output.includes('"msg":"stopping"')) await sleep(20);
  held[0].res.writeHead(200).end('ok');
  t.is(await exited, 0, output);
  // Agenda's own drain waited its whole 15 s after the last job had finished, and reported a timeout.
  t.regex(output, /"msg":"jobs stopped","timedOut":false,"running":0/);
  t.is(held.length, 1, 'delivered once');

  const deliveries = await web.request(`/v1/webhooks/${hook.body.id}/deliveries`, { key: admin });
  t.is(deliveries.status, 200);
  t.deepEqual(
    deliveries.body.items.map((d: { eventId: string; status: string; attemptCount: number }) => [d.eventId, d.status, d.attemptCount]),
    [[held[0].id, 'DELIVERED', 1]],
    'recorded as delivered: not sent again',
  );
});

// A signal during the start: with no handler yet, its default action ended the process wherever it was
// (Agenda's jobs may already be running). Now it waits for the start to finish, then stops as usual.
for (const [name, file, env] of [
  ['the worker', 'src/worker/main.ts', {}],
  ['a web process', 'src/main.ts', { PORT: '0' }],
] as const) {
  test(`SIGTERM while ${name} starts: it finishes starting, then stops gracefully`, async (t) => {
    const child = spawn(process.execPath, [file], { env: { ...process.env, ...env, DATA_DIR: tempDataDir(t), ADMIN_TOKEN: 'start-stop-admin-token-0123456789', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
    t.teardown(() => void child.kill('SIGKILL'));
    // The store is open; the jobs (or the HTTP server) are still to come.
    while (!output.includes('"msg":"store ready"')) {
      if (child.exitCode !== null) t.fail(output);
      await sleep(5);
    }
    child.kill('SIGTERM');
    t.deepEqual(await exited, [0, null], output);
    t.regex(output, /"msg":"stopping","signal":"SIGTERM"/);
    t.regex(output, /"msg":"stopped"/);
  });
}
