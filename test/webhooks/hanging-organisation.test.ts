// Receivers that never answer, belonging to one organisation or reached by several, do not hold up
// another organisation's deliveries. Each test runs the whole service (API and Agenda worker, at most 10
// attempts at once) in its own child process trusting a throwaway CA, as in slow-endpoint.test.ts, so
// each starts with a worker of its own; this process plays real HTTPS receivers. The request timeout is
// set far beyond the test, so no attempt to a hanging receiver ends while the test runs: a healthy
// delivery that arrives does so while the hanging receiver still holds every request it was sent. What is
// asserted is arrival and state, not speed.
//
// The last test does the same for DNS: one organisation's names have a nameserver that never answers
// (test/helpers/nameserver.ts), reached through the service's own resolver via the child's scripted DNS.
import test, { type ExecutionContext } from 'ava';
import { createTestPki, startReceiver, PINNED_TEST_HOSTNAME, type Receiver, type TestPki } from '../helpers/https-receiver.ts';
import { startNameserver } from '../helpers/nameserver.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import type { TestApp } from '../helpers/app.ts';
import { startChildService, type ChildService } from './fixtures/child-service.ts';
import { MAX_IN_FLIGHT_PER_HOST, MAX_IN_FLIGHT_PER_ORGANIZATION } from '../../src/webhooks/attempt-slots.ts';

type Api = Pick<TestApp, 'request' | 'admin'>;

let pki: TestPki;
test.before(async () => {
  pki = await createTestPki();
});
test.after.always(async () => {
  await pki?.cleanup();
});

/** A service of its own (so a worker of its own) for one test, stopped at its end; `ask` talks to it over IPC (fixtures/service.ts). */
async function childService(t: ExecutionContext): Promise<{ api: ChildService; ask: (cmd: string, extra?: Record<string, unknown>) => Promise<any> }> {
  const service = await startChildService(pki, { TEST_WEBHOOK_TIMEOUT_MS: String(10 * 60_000), UV_THREADPOOL_SIZE: '4' });
  t.teardown(() => service.stop());
  return { api: service, ask: (cmd, extra) => service.ask(cmd, extra) };
}

async function receiver(t: ExecutionContext, hang: boolean): Promise<Receiver> {
  const r = await startReceiver({ ...pki.trusted, responses: [hang ? { status: 200, hang: true } : { status: 204 }] });
  t.teardown(() => r.close());
  return r;
}

async function endpoint(t: ExecutionContext, api: Api, org: AppliedOrg, url: string): Promise<string> {
  const res = await api.request('/v1/webhooks', { key: org.keys['admin-key'], body: { url, subscribedTypes: ['purchase.approved'] } });
  t.is(res.status, 201, res.text);
  return res.body.id;
}

async function purchase(t: ExecutionContext, api: Api, org: AppliedOrg, reason: string): Promise<void> {
  const res = await api.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '1200', reason } });
  t.is(res.body?.decision?.outcome, 'APPROVED', res.text);
}

async function deliveryStatuses(api: Api, org: AppliedOrg, endpointId: string): Promise<string[]> {
  const res = await api.request(`/v1/webhooks/${endpointId}/deliveries?limit=100`, { key: org.keys['admin-key'] });
  return (res.body.items as { status: string }[]).map((d) => d.status);
}

/** Waits (polling, no timing asserted) until `done` holds or a generous deadline passes. */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** The healthy organisation: one endpoint at a receiver that answers, one event. */
async function healthyDelivery(t: ExecutionContext, api: Api, healthy: Receiver): Promise<{ org: AppliedOrg; endpointId: string }> {
  const org = await applyManifest(api, acmeManifest('healthyorg'));
  // Another name than the hanging receivers' (`localhost`): a destination host of its own.
  const endpointId = await endpoint(t, api, org, `https://127.0.0.1:${healthy.port}/hooks`);
  await purchase(t, api, org, 'paper for the healthy organisation');
  return { org, endpointId };
}

test('an organisation whose 5 endpoints never answer holds at most its cap of attempts: another organisation\'s delivery arrives meanwhile', async (t) => {
  const { api } = await childService(t);
  const hanging = await receiver(t, true);
  const healthy = await receiver(t, false);

  const stuck = await applyManifest(api, acmeManifest('stuckorg'));
  const stuckEndpoints: string[] = [];
  for (let i = 0; i < 5; i++) stuckEndpoints.push(await endpoint(t, api, stuck, `${hanging.origin}/hooks/${i}`));
  for (let i = 0; i < 4; i++) await purchase(t, api, stuck, `paper ${i}`);
  // Every one of the stuck organisation's 20 deliveries is due (so its attempts are scheduled ahead of the
  // healthy one's), and its attempts have taken their slots, before the healthy one has anything to send.
  await until(async () => (await Promise.all(stuckEndpoints.map((id) => deliveryStatuses(api, stuck, id)))).flat().length === 20);
  await until(() => hanging.inFlight >= MAX_IN_FLIGHT_PER_ORGANIZATION);

  const { org, endpointId } = await healthyDelivery(t, api, healthy);
  await until(async () => (await deliveryStatuses(api, org, endpointId)).includes('DELIVERED'));

  t.is(healthy.requests.length, 1, 'the healthy organisation\'s delivery reached its receiver');
  t.deepEqual(await deliveryStatuses(api, org, endpointId), ['DELIVERED']);
  // ...while the hanging receiver still held every request it had been sent: none timed out.
  t.is(hanging.inFlight, hanging.requests.length);
  t.is(hanging.maxInFlight, MAX_IN_FLIGHT_PER_ORGANIZATION, 'the stuck organisation was attempted up to its cap, no further');
  // Its 20 deliveries all stay PENDING: in flight, or not claimed and still due.
  const stuckStatuses = (await Promise.all(stuckEndpoints.map((id) => deliveryStatuses(api, stuck, id)))).flat();
  t.deepEqual(stuckStatuses, Array(20).fill('PENDING'));
});

test('one host that never answers, reached by three organisations, holds at most its cap of attempts: another organisation\'s delivery arrives meanwhile', async (t) => {
  const { api } = await childService(t);
  const hanging = await receiver(t, true);
  const healthy = await receiver(t, false);

  // Three organisations, two endpoints each at the one hanging host, three events each: each
  // organisation could make 4 attempts at once under its own cap, 12 in all, more than a worker runs.
  const stuck: { org: AppliedOrg; endpointId: string }[] = [];
  for (const handle of ['stuck-a', 'stuck-b', 'stuck-c']) {
    const org = await applyManifest(api, acmeManifest(handle));
    for (let i = 0; i < 2; i++) stuck.push({ org, endpointId: await endpoint(t, api, org, `${hanging.origin}/${handle}/${i}`) });
    for (let i = 0; i < 3; i++) await purchase(t, api, org, `paper ${i}`);
  }
  const stuckStatuses = async () => (await Promise.all(stuck.map((s) => deliveryStatuses(api, s.org, s.endpointId)))).flat();
  await until(async () => (await stuckStatuses()).length === 18);
  await until(() => hanging.inFlight >= MAX_IN_FLIGHT_PER_HOST);

  const { org, endpointId } = await healthyDelivery(t, api, healthy);
  await until(async () => (await deliveryStatuses(api, org, endpointId)).includes('DELIVERED'));

  t.is(healthy.requests.length, 1, 'the healthy organisation\'s delivery reached its receiver');
  t.deepEqual(await deliveryStatuses(api, org, endpointId), ['DELIVERED']);
  t.is(hanging.inFlight, hanging.requests.length);
  t.is(hanging.maxInFlight, MAX_IN_FLIGHT_PER_HOST, 'the hanging host was attempted up to its cap, no further');
  t.deepEqual(await stuckStatuses(), Array(18).fill('PENDING'));
});

test('an organisation whose names\' nameserver never answers, with the thread pool held: another organisation\'s delivery is resolved and arrives meanwhile', async (t) => {
  // Every name here goes to the service's own resolver aimed at this nameserver (after creation, whose
  // check is scripted): the stuck organisation's are never answered, the healthy one's are.
  const silentNames = [0, 1, 2, 3, 4].map((i) => `silent-${i}.webhook-receiver-test.com`);
  const nameserver = await startNameserver({
    ...Object.fromEntries(silentNames.map((name) => [name, 'silent' as const])),
    [PINNED_TEST_HOSTNAME]: { a: ['127.0.0.1'] },
  });
  t.teardown(() => nameserver.close());
  const { api, ask } = await childService(t);
  const loopback = [{ address: '127.0.0.1', family: 4 }];
  const viaNameserver = { nameserver: nameserver.address };
  await ask('dns', {
    answers: {
      ...Object.fromEntries(silentNames.map((name) => [name, [loopback, viaNameserver]])),
      [PINNED_TEST_HOSTNAME]: [loopback, viaNameserver],
    },
  });
  const healthy = await receiver(t, false);

  const stuck = await applyManifest(api, acmeManifest('silentdns'));
  const stuckEndpoints: string[] = [];
  for (const name of silentNames) stuckEndpoints.push(await endpoint(t, api, stuck, `https://${name}:${healthy.port}/hooks`));
  for (let i = 0; i < 4; i++) await purchase(t, api, stuck, `paper ${i}`);
  await until(() => silentNames.filter((name) => nameserver.queries[name] > 0).length >= MAX_IN_FLIGHT_PER_ORGANIZATION);
  // While those names wait on their nameserver, every thread of libuv's pool is taken too, as the
  // stuck organisation's getaddrinfo calls took them when resolution went through dns.lookup.
  t.is((await ask('hold-pool')).threads, 4);

  const org = await applyManifest(api, acmeManifest('healthyorg'));
  const endpointId = await endpoint(t, api, org, `https://${PINNED_TEST_HOSTNAME}:${healthy.port}/hooks`);
  await purchase(t, api, org, 'paper for the healthy organisation');
  await until(async () => (await deliveryStatuses(api, org, endpointId)).includes('DELIVERED'));

  t.deepEqual(await deliveryStatuses(api, org, endpointId), ['DELIVERED']);
  t.is(healthy.requests.length, 1, 'only the healthy organisation\'s delivery reached the receiver');
  t.is(healthy.requests[0].headers.host, `${PINNED_TEST_HOSTNAME}:${healthy.port}`);
  t.true(nameserver.queries[PINNED_TEST_HOSTNAME] > 0, 'the healthy name was resolved by the service\'s resolver');
  // Not vacuous: the pool stayed held the whole time (an fs call queued behind it has not run), and the
  // stuck organisation's names were asked for and never answered.
  t.false((await ask('pool-probe')).ran, 'the thread pool was held throughout');
  const stuckStatuses = (await Promise.all(stuckEndpoints.map((id) => deliveryStatuses(api, stuck, id)))).flat();
  t.deepEqual(stuckStatuses, Array(20).fill('PENDING'));
});
