// What a worker's webhook attempts do once its process stops (src/webhooks/runtime.ts stopSignal): one in
// flight is abandoned, neither recorded nor left under its lease, and put back on the schedule; the sweep
// starts no new one. The real process, with a real slow receiver, is in test/process/worker-stop.test.ts.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import type { Scheduler } from '../../src/jobs/scheduler.ts';
import { configureWebhooks, stopAttempts } from '../../src/webhooks/runtime.ts';
import { attemptDelivery, attemptDueDeliveries } from '../../src/webhooks/deliver.ts';
import { dispatchEvents } from '../../src/webhooks/dispatch.ts';
import { webhookCollections } from '../../src/webhooks/documents.ts';
import { ABANDONED, type AttemptResult, type SendInput } from '../../src/webhooks/send.ts';
import { ATTEMPT_DELIVERY } from '../../src/webhooks/queue.ts';
import { setTimeout as sleep } from 'node:timers/promises';

test('once the process stops, the attempt in flight is abandoned and put back on the schedule, and the sweep starts none', async (t) => {
  const scheduled: { name: string; data: Record<string, unknown> }[] = [];
  const scheduler: Scheduler = { schedule: async (name, _at, data) => void scheduled.push({ name, data }) };
  const app = await startApp({ env: { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex') }, scheduler });
  t.teardown(() => app.close());
  // A receiver that never answers: the attempt ends only when the process stops (as the real sender does).
  let sent = 0;
  const send = (input: SendInput) =>
    new Promise<AttemptResult>((resolve) => {
      sent++;
      input.stopping?.addEventListener('abort', () => resolve({ verdict: 'RETRY', statusCode: null, durationMs: 1, errorClass: ABANDONED, responseSnippet: null, errorDetail: null }));
    });
  configureWebhooks(app.deps, { send, lookup: async () => [{ address: '93.184.215.14', family: 4 }] });

  const org = await applyManifest(app, acmeManifest('stopping'));
  const hook = await app.request('/v1/webhooks', { key: org.keys['admin-key'], body: { url: 'https://hooks.stopping-test.com/x', subscribedTypes: ['purchase.approved'] } });
  t.is(hook.status, 201, hook.text);
  for (const reason of ['one', 'two']) {
    const bought = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '1200', reason } });
    t.is(bought.status, 201, bought.text);
  }
  await dispatchEvents(app.deps);
  const { deliveries } = webhookCollections(app.store.db);
  const [first] = await deliveries.find({ endpointId: hook.body.id }).sort({ _id: 1 }).toArray();
  scheduled.length = 0;

  const inFlight = attemptDelivery(app.deps, first._id);
  while (sent === 0) await sleep(10);
  stopAttempts(app.deps);
  t.deepEqual(await inFlight, { kind: 'ABANDONED' });
  const after = (await deliveries.findOne({ _id: first._id }))!;
  t.like(after, { status: 'PENDING', attemptCount: 0, leaseToken: null, lastAttemptAt: null });
  t.true(after.leaseUntil.getTime() <= Date.now(), 'the lease is given back, not left to run out');
  t.deepEqual(scheduled, [{ name: ATTEMPT_DELIVERY, data: { deliveryId: first._id } }]);

  // Both are due; nothing more is sent or scheduled by this process.
  t.is(await attemptDueDeliveries(app.deps), 0);
  t.is(sent, 1);
  t.is(scheduled.length, 1);
  t.is(await deliveries.countDocuments({ endpointId: hook.body.id, status: 'PENDING', attemptCount: 0 }), 2);
});
