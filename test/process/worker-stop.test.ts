// SIGTERM to the worker process (`node src/worker/main.ts`) while a webhook delivery is in progress: the
// attempt is abandoned, not waited for, the worker stops at once and says whether it had to cut anything
// off, and the next worker makes the attempt again (docs/operate/deployment.md, "Shutdown"). And SIGTERM
// while a process starts.
import test from 'ava';
import { spawn } from 'node:child_process';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { acmeManifest } from '../helpers/fixtures.ts';
import { createTestPki } from '../helpers/https-receiver.ts';
import { startService, tempDataDir } from '../helpers/service-process.ts';

test('SIGTERM during a slow webhook delivery: the worker stops without waiting for the receiver, and the next one sends it again under the same id', async (t) => {
  const pki = await createTestPki();
  t.teardown(() => pki.cleanup());
  // What happened, in order. The receiver answers its first request only after a while (well inside the
  // attempt's 10 s timeout, so a worker that waited for it would see it delivered), every later one at once.
  const happened: string[] = [];
  const received: { id: string; webhookId: string; attempt: string }[] = [];
  const slow: NodeJS.Timeout[] = [];
  const receiver = createServer({ key: pki.trusted.key, cert: pki.trusted.cert }, (req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push({ id: JSON.parse(body).id, webhookId: String(req.headers['service-webhook-id']), attempt: String(req.headers['service-webhook-attempt']) });
      const answer = () => {
        happened.push(`answered ${received.length}`);
        res.writeHead(200).end('ok');
      };
      if (received.length === 1) slow.push(setTimeout(answer, 8_000));
      else answer();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    slow.forEach(clearTimeout);
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
  const deliveries = async () =>
    (await web.request(`/v1/webhooks/${hook.body.id}/deliveries`, { key: admin })).body.items.map((d: { eventId: string; status: string; attemptCount: number }) => [d.eventId, d.status, d.attemptCount]);

  const startWorker = () => {
    const worker = spawn(process.execPath, ['src/worker/main.ts'], { env: { ...process.env, ...env, DATA_DIR: dataDir, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    worker.stdout.on('data', (d) => (output += d));
    worker.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => worker.once('exit', resolve));
    t.teardown(() => void worker.kill('SIGKILL'));
    return { worker, output: () => output, exited };
  };

  const first = startWorker();
  while (received.length === 0) {
    if (first.worker.exitCode !== null) t.fail(first.output());
    await sleep(50);
  }
  first.worker.kill('SIGTERM');
  t.is(await first.exited, 0, first.output());
  happened.push('worker exited');
  t.deepEqual(happened, ['worker exited'], 'the worker did not wait for the slow answer');
  t.regex(first.output(), /"msg":"jobs stopped","timedOut":false,"running":0/);
  t.log(/"msg":"stopped".*/.exec(first.output())?.[0]);
  const [event] = received;
  t.deepEqual(await deliveries(), [[event.id, 'PENDING', 0]], 'the abandoned attempt is not recorded: it is still to be made');

  // The next worker sends it again at once (it was put back on the schedule), under the same event id.
  const second = startWorker();
  while ((await deliveries())[0][1] !== 'DELIVERED') {
    if (second.worker.exitCode !== null) t.fail(second.output());
    await sleep(100);
  }
  second.worker.kill('SIGTERM');
  t.is(await second.exited, 0, second.output());
  t.deepEqual(received.slice(1), [{ ...event }], 'sent again, once, with the same Service-Webhook-Id and attempt number');
  t.is(event.webhookId, event.id);
  t.deepEqual(await deliveries(), [[event.id, 'DELIVERED', 1]]);
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
