// The outbox across a crash, with the service as a real process (`node src/main.ts` on a DATA_DIR,
// running its own jobs) and a real HTTPS receiver: docs/integrate/webhooks.md ("Every domain change writes its
// events to the `events` outbox in the same transaction") and docs/reference/contract.md §6.3. A burst of purchases
// is cut by SIGKILL, so some are committed and not yet dispatched or sent, and some transactions never
// commit; the service is started again on the same data and every purchase is submitted again with its
// Idempotency-Key (a committed one replays, one that never committed is made now). Then: every purchase
// is delivered, under one event id whatever the retries and replays, and nothing is delivered for a
// purchase that does not exist. A SIGKILL while an attempt waits for its answer: the restarted service
// sends the same bytes under the same id again once the dead process's lease runs out. And a burst to
// one endpoint is delivered as attempts end, not one job poll at a time.
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { createTestPki, startReceiver, type ProgrammedResponse } from '../helpers/https-receiver.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { startService, tempDataDir, type ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from './fixtures/child-service.ts';

const N = 40;
const body = (i: number) => ({ merchant: 'Paper Co', amountMinor: String(1000 + i), reason: `crash burst ${i}` });

async function submit(svc: ServiceProcess, key: string, i: number): Promise<{ status: number; body: any }> {
  const res = await fetch(`${svc.url}/v1/purchase-requests`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `crash-${i}` },
    body: JSON.stringify(body(i)),
  });
  return { status: res.status, body: await res.json() };
}

/** A real HTTPS receiver (answering 200 unless told), and the env of a service that trusts it and may deliver to localhost. */
async function receiverAndEnv(t: ExecutionContext, extra: Record<string, string> = {}, responses: ProgrammedResponse[] = [{ status: 200 }]) {
  const pki = await createTestPki();
  const receiver = await startReceiver({ ...pki.trusted, responses });
  t.teardown(async () => {
    await receiver.close();
    await pki.cleanup();
  });
  const env = { NODE_ENV: 'test', NODE_EXTRA_CA_CERTS: pki.caPath, WEBHOOK_UNSAFE_ALLOW_LOCAL: '1', WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex'), ...extra };
  return { receiver, env };
}

/** An organisation on `svc` with one endpoint at `origin` subscribed to purchase.approved. */
async function organisationWithEndpoint(svc: ServiceProcess, handle: string, origin: string) {
  const admin = async (path: string, o: { body?: unknown } = {}) => {
    const res = await svc.admin(path, o.body);
    return { ...res, text: JSON.stringify(res.body), headers: new Headers() };
  };
  const o = await applyManifest({ admin } as never, acmeManifest(handle));
  const created = await svc.request('/v1/webhooks', { key: o.keys['admin-key'], body: { url: `${origin}/hooks`, subscribedTypes: ['purchase.approved'] } });
  if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  return { admin: o.keys['admin-key'], buyer: o.keys['buyer-key'], webhookId: created.body.id as string };
}

test('SIGKILL between commit and send: every committed event is delivered once under one id, no event of an uncommitted transaction ever', async (t) => {
  const { receiver, env } = await receiverAndEnv(t);
  const dataDir = tempDataDir(t);
  let svc = await startService(t, dataDir, env);
  const { admin, buyer, webhookId } = await organisationWithEndpoint(svc, 'outbox-crash', receiver.origin);

  let acknowledged = 0;
  const first = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      submit(svc, buyer, i).then(
        (res) => {
          if (res.status === 201 && ++acknowledged === 10) svc.child.kill('SIGKILL');
          return res;
        },
        () => null,
      ),
    ),
  );
  await svc.stop('SIGKILL');
  t.true(acknowledged >= 10);

  svc = await startService(t, dataDir, env);
  const again = await Promise.all(Array.from({ length: N }, (_, i) => submit(svc, buyer, i)));
  t.true(again.every((r) => r.status === 200 || r.status === 201), JSON.stringify(again.find((r) => r.status >= 300)?.body));
  const ids = new Set(again.map((r) => r.body.purchaseRequest.id as string));
  t.is(ids.size, N);
  for (const r of first) if (r?.status === 201) t.true(ids.has(r.body.purchaseRequest.id), 'a purchase acknowledged before the crash replays as itself');

  const items = await waitFor('every purchase delivered', async () => {
    const list = await svc.request(`/v1/webhooks/${webhookId}/deliveries?limit=100`, { key: admin });
    const all = list.body.items as Array<{ status: string; eventId: string }>;
    return all.filter((d) => d.status === 'DELIVERED').length >= N && all;
  }, 60_000);
  t.is(items.length, N, 'one delivery per purchase, none for anything else');

  const eventOf = new Map<string, Set<string>>();
  for (const request of receiver.requests) {
    const envelope = JSON.parse(request.body.toString('utf8'));
    t.is(request.headers['service-webhook-id'], envelope.id);
    t.true(ids.has(envelope.data.purchaseRequestId), 'delivered only for a purchase that exists');
    eventOf.set(envelope.data.purchaseRequestId, (eventOf.get(envelope.data.purchaseRequestId) ?? new Set()).add(envelope.id));
  }
  t.is(eventOf.size, N, 'every purchase delivered');
  t.true([...eventOf.values()].every((events) => events.size === 1), 'each purchase under one event id, however often it was sent');
  t.deepEqual(items.map((d) => d.eventId).sort(), [...eventOf.values()].flatMap((e) => [...e]).sort());
});

test('a burst to one endpoint is taken up as attempts end, not one poll of the job queue at a time', async (t) => {
  // JOBS_PROCESS_EVERY at its longest: only what this process schedules for itself can run meanwhile. The
  // endpoint's cap lets 2 of the 12 go at once; the other 10 must follow as those attempts end
  // (docs/integrate/webhooks.md, "Jobs"), not at the next poll an hour later.
  const { receiver, env } = await receiverAndEnv(t, { JOBS_PROCESS_EVERY: '60 minutes' });
  const svc = await startService(t, tempDataDir(t), env);
  const { admin, webhookId } = await organisationWithEndpoint(svc, 'burst', receiver.origin);
  const queued = await Promise.all(Array.from({ length: 12 }, () => svc.request(`/v1/webhooks/${webhookId}/test`, { key: admin, method: 'POST' })));
  t.true(queued.every((r) => r.status === 202));
  await waitFor('all 12 delivered', () => receiver.requests.length >= 12);
  t.is(new Set(receiver.requests.map((r) => r.headers['service-webhook-id'])).size, 12);
});

test('SIGKILL while an attempt waits for the receiver: after the restart the same event is sent again, same id and bytes, and recorded once', async (t) => {
  // The dead process's lease at its shortest and the sweep that takes its attempt up again every second: the
  // same path as in production (a minute's lease, a minute's sweep), without waiting out those minutes.
  t.timeout(120_000);
  const quick = { WEBHOOK_ATTEMPT_LEASE: '15 seconds', WEBHOOK_SWEEP_EVERY: '1 second' };
  const { receiver, env } = await receiverAndEnv(t, quick, [{ status: 0, hang: true }, { status: 200 }]);
  const dataDir = tempDataDir(t);
  let svc = await startService(t, dataDir, env);
  const { admin, buyer, webhookId } = await organisationWithEndpoint(svc, 'in-flight', receiver.origin);
  t.is((await submit(svc, buyer, 0)).status, 201);
  await waitFor('the attempt in flight', () => receiver.requests.length === 1);
  await svc.stop('SIGKILL');

  svc = await startService(t, dataDir, env);
  const [d] = await waitFor('the delivery recorded', async () => {
    const items = (await svc.request(`/v1/webhooks/${webhookId}/deliveries`, { key: admin })).body.items;
    return items[0]?.status === 'DELIVERED' && items;
  }, 90_000);
  const [first, again] = receiver.requests;
  t.is(receiver.requests.length, 2);
  t.true(again.body.equals(first.body));
  t.is(again.headers['service-webhook-id'], first.headers['service-webhook-id']);
  t.like(d, { eventId: first.headers['service-webhook-id'], attemptCount: 1, lastStatusCode: 200 });
});
