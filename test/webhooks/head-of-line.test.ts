// What a failure holds up (docs/reference/contract.md §6.3 rule 2: no ordering guarantee, so nothing need wait behind
// anything). The whole service (API and Agenda worker, dispatching every 200 ms) runs in a child process
// trusting a throwaway CA, as in end-to-end.test.ts; this process plays real HTTPS receivers. The
// service's clock is never moved: no retry comes due while the tests run.
import test from 'ava';
import { createTestPki, startReceiver, type ProgrammedResponse, type Receiver, type TestPki } from '../helpers/https-receiver.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { startChildService, waitFor, type ChildService } from './fixtures/child-service.ts';
import { MAX_DISPATCH_FAILURES } from '../../src/webhooks/dispatch.ts';

let pki: TestPki;
let api: ChildService;
const receivers: Receiver[] = [];

test.before(async () => {
  pki = await createTestPki();
  api = await startChildService(pki);
});

test.after.always(async () => {
  api?.stop();
  await Promise.all(receivers.map((r) => r.close()));
  await pki?.cleanup();
});

async function receiver(responses: ProgrammedResponse[]): Promise<Receiver> {
  const r = await startReceiver({ ...pki.trusted, responses });
  receivers.push(r);
  return r;
}

async function organisationWithEndpoint(handle: string, r: Receiver) {
  const org = await applyManifest(api, acmeManifest(handle));
  const admin = org.keys['admin-key'];
  const res = await api.request('/v1/webhooks', { key: admin, body: { url: `${r.origin}/hooks`, subscribedTypes: ['purchase.approved'] } });
  if (res.status !== 201) throw new Error(res.text);
  return { ...org, admin, buyer: org.keys['buyer-key'], endpointId: res.body.id as string };
}

async function approved(buyer: string, reason: string): Promise<void> {
  const res = await api.request('/v1/purchase-requests', { key: buyer, body: { merchant: 'Paper Co', amountMinor: '1200', reason } });
  if (res.body?.decision?.outcome !== 'APPROVED') throw new Error(res.text);
}

const eventIds = (r: Receiver) => new Set(r.requests.map((req) => String(req.headers['service-webhook-id'])));

test.serial('an event whose dispatch always fails holds up no other event, and is set aside after a bounded number of runs', async (t) => {
  const first = await receiver([{ status: 204 }]);
  const second = await receiver([{ status: 204 }]);
  const a = await organisationWithEndpoint('hol-a', first);
  const b = await organisationWithEndpoint('hol-b', second);
  // The oldest event in the outbox, for a's endpoint, and one whose dispatch fails every time: its
  // createdAt is no date, so its envelope cannot be written. (Before: the dispatcher stopped at it,
  // run after run, and no event of any organisation was dispatched again.)
  const poisoned = '00000000-0000-7000-8000-000000000000';
  await api.ask('insert', { collection: 'events', doc: { _id: poisoned, type: 'purchase.approved', organizationId: a.organizationId, createdAt: 'not a date', data: {}, dispatchedAt: null } });
  await approved(a.buyer, 'after the poisoned event, same organisation');
  await approved(b.buyer, 'after the poisoned event, another organisation');

  await waitFor('both events delivered', () => eventIds(first).size === 1 && eventIds(second).size === 1, 20_000);
  t.false(eventIds(first).has(poisoned));

  // Each failed run is counted on the event; the one that reaches the bound sets it aside. (Before: it
  // was tried, and logged at error, every run for ever.)
  const poisonedEvent = async () => {
    const dump = JSON.parse((await api.ask<{ json: string }>('dump')).json) as Record<string, Array<Record<string, unknown>>>;
    return dump.events.find((e) => e._id === poisoned)!;
  };
  await waitFor('the failing event set aside', async () => typeof (await poisonedEvent()).dispatchSetAsideAt === 'string', 20_000);
  // Later runs pass it by: another event of a's is dispatched and delivered after it was set aside.
  await approved(a.buyer, 'after the poisoned event was set aside');
  await waitFor('the later event delivered', () => eventIds(first).size === 2, 20_000);
  t.like(await poisonedEvent(), { dispatchedAt: null, dispatchFailures: MAX_DISPATCH_FAILURES });

  const lines = (await api.ask<{ lines: string[] }>('logs')).lines.map((line) => JSON.parse(line));
  const failures = lines.filter((l) => l.msg === 'webhook dispatch failed');
  t.is(failures.length, MAX_DISPATCH_FAILURES);
  t.true(failures.every((l) => l.eventId === poisoned && l.level === 'warn'), JSON.stringify(failures.slice(0, 3)));
  const setAside = lines.filter((l) => l.msg === 'webhook event set aside');
  t.deepEqual(
    setAside.map((l) => [l.level, l.eventId, l.failures]),
    [['error', poisoned, MAX_DISPATCH_FAILURES]],
  );
  const { text } = await api.ask<{ text: string }>('metrics');
  t.regex(text, /^spend_webhook_events_set_aside_total 1$/m);
});

test.serial('a delivery its receiver refuses (500, retried in a minute) holds up neither its endpoint’s next event nor another endpoint', async (t) => {
  // The first request this receiver gets is answered 500, every later one 204.
  const flaky = await receiver([{ status: 500 }, { status: 204 }]);
  const other = await receiver([{ status: 204 }]);
  const a = await organisationWithEndpoint('hol-c', flaky);
  const b = await organisationWithEndpoint('hol-d', other);
  await approved(a.buyer, 'one');
  await approved(a.buyer, 'two');
  await approved(b.buyer, 'three');

  const items = await waitFor('one delivered and one waiting for its retry', async () => {
    const res = await api.request(`/v1/webhooks/${a.endpointId}/deliveries`, { key: a.admin });
    const statuses = (res.body.items as Array<{ status: string }>).map((d) => d.status).sort();
    return statuses.join() === 'DELIVERED,PENDING' && (res.body.items as Array<Record<string, unknown>>);
  });
  t.like(items.find((d) => d.status === 'PENDING'), { attemptCount: 1, lastStatusCode: 500 });
  t.like(items.find((d) => d.status === 'DELIVERED'), { attemptCount: 1, lastStatusCode: 204 });
  await waitFor('the other endpoint’s event', () => eventIds(other).size === 1);
  t.is(eventIds(flaky).size, 2);
});
