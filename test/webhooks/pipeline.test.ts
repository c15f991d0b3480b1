// The delivery pipeline on real Agenda jobs with a controllable clock (docs/reference/contract.md §6.3-6.5): outbox
// fan-out, the seven-attempt jittered schedule, verdicts, counters, leases, the sweep that makes
// a crash lose nothing, and what disable/revoke do. The HTTP sender is replaced by a recording
// fake here (the real one, against a real HTTPS receiver, is in end-to-end.test.ts), except for the
// destination re-check, which uses the real sendWebhook with an injected DNS answer.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import type { Agenda } from 'agenda';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { createAgenda } from '../../src/jobs/agenda.ts';
import type { Scheduler } from '../../src/jobs/scheduler.ts';
import { configureWebhooks } from '../../src/webhooks/runtime.ts';
import { defineWebhookJobs, scheduleRecurringWebhookJobs, ATTEMPT_DELIVERY, ATTEMPT_DUE_DELIVERIES, DISPATCH_EVENTS } from '../../src/webhooks/jobs.ts';
import { attemptDelivery, attemptDueDeliveries, cancelPendingDeliveriesOf } from '../../src/webhooks/deliver.ts';
import { attemptSlots, MAX_IN_FLIGHT_PER_ENDPOINT, MAX_IN_FLIGHT_PER_ORGANIZATION } from '../../src/webhooks/attempt-slots.ts';
import { dispatchEvents } from '../../src/webhooks/dispatch.ts';
import { webhookCollections, type WebhookDeliveryDoc } from '../../src/webhooks/documents.ts';
import { eventsCollection } from '../../src/events/documents.ts';
import { recordEvent } from '../../src/events/outbox.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../schemas/webhooks.ts';
import { sendWebhook, type AttemptResult, type SendInput } from '../../src/webhooks/send.ts';
import { verifySignature, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../../src/webhooks/signing.ts';
import { RETRY_DELAYS_MS, SIGNING_RETRY_MS } from '../../src/webhooks/schedule.ts';
import type { LookupFn } from '../../src/webhooks/destination.ts';

const KEY_HEX = randomBytes(32).toString('hex');
const MIN = 60_000;

// ---- A controllable clock, a recording scheduler and a scripted receiver. ----

let offset = 0;
const now = () => new Date(Date.now() + offset);
const advanceTo = (at: Date) => {
  offset += Math.max(0, at.getTime() - now().getTime()) + 1;
};

interface Scheduled {
  name: string;
  at: Date;
  data: Record<string, unknown>;
}
const scheduled: Scheduled[] = [];
// Jobs go on the schedule in the clock's time, which Agenda does not know; the test moves the
// clock to `at` and then runs exactly that job through Agenda.
const recordingScheduler: Scheduler = {
  async schedule(name, at, data) {
    scheduled.push({ name, at, data });
  },
};

interface Sent {
  url: string;
  body: Buffer;
  headers: Record<string, string>;
  at: Date;
}
const sent: Sent[] = [];
// Per URL path, the verdicts the fake receiver gives in turn (the last one repeats).
const scripts = new Map<string, Array<Partial<AttemptResult> & { verdict: AttemptResult['verdict'] }>>();
let sendGate: Promise<void> | null = null;
// Per URL path, a receiver that does not answer until the promise settles.
const hanging = new Map<string, Promise<void>>();

async function fakeSend(input: SendInput): Promise<AttemptResult> {
  sent.push({ url: input.url.href, body: Buffer.from(input.body), headers: input.headers, at: now() });
  if (sendGate) await sendGate;
  await hanging.get(input.url.pathname);
  const script = scripts.get(input.url.pathname) ?? [{ verdict: 'SUCCESS', statusCode: 200 }];
  const next = script.length > 1 ? script.shift()! : script[0];
  return { statusCode: null, durationMs: 12, errorClass: null, responseSnippet: null, errorDetail: null, ...next };
}

const DNS: Record<string, string[]> = { 'hooks.pipeline-test.com': ['93.184.215.14'], 'rebound.pipeline-test.com': ['93.184.215.14'] };
const lookup: LookupFn = async (hostname) => {
  const answer = DNS[hostname];
  if (!answer) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
  return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

let app: TestApp;
let agenda: Agenda;
const completed = new Set<string>();
const waiting = new Map<string, () => void>();
const failures: string[] = [];
let randomValues: number[] = [];

test.before(async () => {
  app = await startApp({ env: { WEBHOOK_ENCRYPTION_KEY: KEY_HEX }, now, scheduler: recordingScheduler });
  configureWebhooks(app.deps, { send: fakeSend, lookup, random: () => (randomValues.length > 0 ? randomValues.shift()! : 0.5) });
  // A short lock lifetime: Agenda keeps a timer of lockLifetime / 2 per job it ran, which would
  // hold this process open for 30 s after the last test with the default.
  agenda = await createAgenda(app.store, { processEvery: 50, lockLifetimeMs: 2000 });
  defineWebhookJobs(agenda, app.deps);
  agenda.on('complete', (job) => {
    const id = String(job.attrs._id);
    completed.add(id);
    waiting.get(id)?.();
  });
  agenda.on('fail', (err, job) => failures.push(`${job.attrs.name}: ${String(err)}`));
  await agenda.start();
});
test.after.always(async () => {
  await agenda?.stop();
  await app?.close();
});
test.afterEach((t) => {
  t.deepEqual(failures, [], 'no job failed');
});

/** Runs one job through Agenda now and waits for it to complete. */
async function runJob(name: string, data: Record<string, unknown> = {}): Promise<void> {
  const job = await agenda.now(name, data);
  const id = String(job.attrs._id);
  if (!completed.has(id)) await new Promise<void>((resolve) => waiting.set(id, resolve));
}

let orgs = 0;
async function setup(paths: string[], subscribedTypes = ['purchase.approved', 'purchase.rejected', 'purchase.approval_required']) {
  const applied = await applyManifest(app, acmeManifest(`pipe${++orgs}`));
  const admin = applied.keys['admin-key'];
  const endpoints: Array<{ id: string; secret: string; path: string }> = [];
  for (const path of paths) {
    const res = await app.request('/v1/webhooks', { key: admin, body: { url: `https://hooks.pipeline-test.com${path}`, subscribedTypes } });
    if (res.status !== 201) throw new Error(res.text);
    endpoints.push({ id: res.body.id, secret: res.body.secret, path });
  }
  return { ...applied, admin, buyer: applied.keys['buyer-key'], endpoints };
}

async function purchase(buyer: string, amountMinor = '1200') {
  const res = await app.request('/v1/purchase-requests', { key: buyer, body: { merchant: 'Paper Co', amountMinor, reason: 'printer paper' } });
  if (res.status !== 201) throw new Error(res.text);
  return res.body;
}

const delivery = async (id: string) => (await webhookCollections(app.store.db).deliveries.findOne({ _id: id }))!;
const endpointDoc = async (id: string) => (await webhookCollections(app.store.db).endpoints.findOne({ _id: id }))!;
const deliveriesOf = (endpointId: string) => webhookCollections(app.store.db).deliveries.find({ endpointId }).sort({ _id: 1 }).toArray();
const sentTo = (path: string) => sent.filter((s) => new URL(s.url).pathname === path);
const scheduledFor = (deliveryId: string) => scheduled.filter((s) => s.name === ATTEMPT_DELIVERY && s.data.deliveryId === deliveryId);

// The tests share one clock and one Agenda, so they run one at a time.

test.serial('dispatch fans an event out to each ACTIVE subscribed endpoint of its organisation, once', async (t) => {
  const o = await setup(['/d-a', '/d-b', '/d-disabled', '/d-revoked']);
  const other = await setup(['/d-other']);
  const unsubscribed = await app.request('/v1/webhooks', { key: o.admin, body: { url: 'https://hooks.pipeline-test.com/d-unsub', subscribedTypes: ['budget.exhausted'] } });
  await app.request(`/v1/webhooks/${o.endpoints[2].id}`, { method: 'PATCH', key: o.admin, body: { status: 'DISABLED' } });
  await app.request(`/v1/webhooks/${o.endpoints[3].id}`, { method: 'DELETE', key: o.admin });

  const p = await purchase(o.buyer);
  const events = await eventsCollection(app.store.db).find({ organizationId: o.organizationId, dispatchedAt: null }).toArray();
  t.is(events.length, 1);
  const [event] = events;
  t.is(event.type, 'purchase.approved');

  await runJob(DISPATCH_EVENTS);
  await runJob(DISPATCH_EVENTS); // idempotent
  t.truthy((await eventsCollection(app.store.db).findOne({ _id: event._id }))?.dispatchedAt);
  const made = await webhookCollections(app.store.db).deliveries.find({ eventId: event._id }).toArray();
  t.deepEqual(made.map((d) => d.endpointId).sort(), [o.endpoints[0].id, o.endpoints[1].id].sort());
  t.is((await deliveriesOf(unsubscribed.body.id)).length, 0);
  t.is((await deliveriesOf(other.endpoints[0].id)).length, 0);
  for (const d of made) {
    t.like(d, { status: 'PENDING', attemptCount: 0, eventType: 'purchase.approved', organizationId: o.organizationId });
    t.is(d.occurredAt.getTime(), event.createdAt.getTime());
    const envelope = JSON.parse(d.body);
    t.deepEqual(Object.keys(envelope), ['id', 'type', 'apiVersion', 'createdAt', 'accountId', 'data']);
    t.like(envelope, { id: event._id, type: 'purchase.approved', apiVersion: '2026-09-01', accountId: o.organizationId, createdAt: event.createdAt.toISOString() });
    t.like(envelope.data, { resolvedBy: 'ENGINE', approvalRequestId: null });
    t.is(typeof envelope.data.purchaseRequestId, 'string');
    t.true(JSON.stringify(p).includes(envelope.data.purchaseRequestId));
    t.is(scheduledFor(d._id).length, 1, 'first attempt scheduled at once');
    t.true(Math.abs(scheduledFor(d._id)[0].at.getTime() - d.createdAt.getTime()) < 1000);
  }
  // The dispatcher's direct call is idempotent too, even against a raced event.
  t.is(await dispatchEvents(app.deps), 0);
});

test.serial('every kind of event reaches an endpoint subscribed to it: purchase, agent, and (recorded as their features will) connection and security', async (t) => {
  const o = await setup(['/all'], [...SUBSCRIBABLE_EVENT_TYPES]);
  await purchase(o.buyer, '1200'); // approved
  await purchase(o.buyer, '30000'); // above the approval threshold
  const blocked = await app.request('/v1/purchase-requests', { key: o.buyer, body: { merchant: 'Shady Goods Ltd', amountMinor: '100', reason: 'x' } });
  t.is(blocked.status, 201);
  const disabled = await app.admin(`/admin/agents/${o.agents.travel.id}`, { method: 'PATCH', body: { status: 'DISABLED' } });
  t.is(disabled.status, 200, disabled.text);
  await app.store.withTransaction(async (session) => {
    await recordEvent(app.store.db, session, { type: 'connection.created', organizationId: o.organizationId, createdAt: now(), data: { connectionId: 'c1' } });
    await recordEvent(app.store.db, session, { type: 'security.connection_token_reuse_detected', organizationId: o.organizationId, createdAt: now(), data: { connectionId: 'c1' } });
  });
  await runJob(DISPATCH_EVENTS);
  const made = await deliveriesOf(o.endpoints[0].id);
  const types = made.map((d) => d.eventType).sort();
  t.deepEqual(types, ['agent.disabled', 'connection.created', 'purchase.approval_required', 'purchase.approved', 'purchase.rejected', 'security.connection_token_reuse_detected']);
  for (const d of made) {
    await runJob(ATTEMPT_DELIVERY, { deliveryId: d._id });
    t.is((await delivery(d._id)).status, 'DELIVERED');
  }
  const bodies = sentTo('/all').map((x) => JSON.parse(x.body.toString()));
  t.deepEqual(bodies.map((b) => b.type).sort(), types);
  t.true(bodies.every((b) => b.accountId === o.organizationId && b.apiVersion === '2026-09-01'));
});

test.serial('seven attempts on the jittered schedule, same body and event id, fresh timestamps; then EXHAUSTED', async (t) => {
  const o = await setup(['/always-503']);
  scripts.set('/always-503', [{ verdict: 'RETRY', statusCode: 503, errorClass: 'HTTP_STATUS', responseSnippet: 'busy' }]);
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  const [d0] = await deliveriesOf(o.endpoints[0].id);
  // Jitter draws: the extremes and the middle of the +-20% band.
  randomValues = [0, 0.999999, 0.5, 0.25, 0.75, 1];

  const gaps: number[] = [];
  let job = scheduledFor(d0._id).at(-1)!;
  for (let attempt = 1; attempt <= 7; attempt++) {
    // Not yet due: running the job changes nothing.
    if (attempt > 1) {
      await runJob(ATTEMPT_DELIVERY, job.data);
      t.is((await delivery(d0._id)).attemptCount, attempt - 1, `attempt ${attempt} not made early`);
    }
    advanceTo(job.at);
    await runJob(ATTEMPT_DELIVERY, job.data);
    const d = await delivery(d0._id);
    t.is(d.attemptCount, attempt);
    t.is(sentTo('/always-503').length, attempt);
    if (attempt < 7) {
      t.is(d.status, 'PENDING');
      const gap = d.nextAttemptAt!.getTime() - d.lastAttemptAt!.getTime();
      gaps.push(gap);
      const nominal = RETRY_DELAYS_MS[attempt - 1];
      t.true(gap >= nominal * 0.8 - 1 && gap <= nominal * 1.2, `gap ${attempt}: ${gap} vs ${nominal}`);
      const next = scheduledFor(d0._id).at(-1)!;
      t.is(next.at.getTime(), d.nextAttemptAt!.getTime(), 'the next attempt is on the job schedule');
      job = next;
    } else {
      t.is(d.status, 'EXHAUSTED');
      t.is(d.nextAttemptAt, null);
    }
    t.like(d, { lastStatusCode: 503, lastErrorClass: 'HTTP_STATUS', lastResponseSnippet: 'busy', lastDurationMs: 12, deliveredAt: null });
  }
  t.is(gaps[0], Math.round(RETRY_DELAYS_MS[0] * 0.8));
  t.true(gaps[1] > RETRY_DELAYS_MS[1] * 1.19);
  t.is(gaps[2], RETRY_DELAYS_MS[2]);
  t.is(scheduledFor(d0._id).length, 7, 'one initial + six retries, nothing after the seventh');

  const attempts = sentTo('/always-503');
  t.true(attempts.every((a) => a.body.equals(attempts[0].body)), 'identical body bytes');
  t.true(attempts.every((a) => a.headers['Service-Webhook-Id'] === d0.eventId));
  t.deepEqual(attempts.map((a) => a.headers['Service-Webhook-Attempt']), ['1', '2', '3', '4', '5', '6', '7']);
  const stamps = attempts.map((a) => Number(a.headers[WEBHOOK_TIMESTAMP_HEADER]));
  t.is(new Set(stamps).size, 7, 'a fresh timestamp each time');
  for (const a of attempts) {
    t.true(verifySignature({ header: a.headers[WEBHOOK_SIGNATURE_HEADER], timestamp: a.headers[WEBHOOK_TIMESTAMP_HEADER], body: a.body, secret: o.endpoints[0].secret, now: a.at }));
  }
  const e = await endpointDoc(o.endpoints[0].id);
  t.like(e, { status: 'ACTIVE', consecutiveFailures: 7, lastStatusCode: 503, lastErrorClass: 'HTTP_STATUS' });
  t.truthy(e.lastFailureAt);

  // Much later, the sweep finds nothing to do for it.
  offset += 48 * 3600_000;
  await runJob(ATTEMPT_DUE_DELIVERIES);
  t.is(sentTo('/always-503').length, 7);
});

test.serial('while the service cannot sign (SIGNING_UNAVAILABLE) nothing is sent and no attempt is used up: the destination still gets its seven', async (t) => {
  const o = await setup(['/unsigned']);
  scripts.set('/unsigned', [{ verdict: 'SUCCESS', statusCode: 204 }]);
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  const [d0] = await deliveriesOf(o.endpoints[0].id);
  const { endpoints } = webhookCollections(app.store.db);
  const sealed = (await endpointDoc(o.endpoints[0].id)).secrets!.current;
  // As after WEBHOOK_ENCRYPTION_KEY changed: the stored secret no longer opens.
  await endpoints.updateOne({ _id: o.endpoints[0].id }, { $set: { 'secrets.current': 'v1.AAAA.AAAA.AAAA' } });

  for (let round = 1; round <= 9; round++) {
    advanceTo((await delivery(d0._id)).nextAttemptAt!);
    await runJob(ATTEMPT_DELIVERY, { deliveryId: d0._id });
    const d = await delivery(d0._id);
    t.like(d, { status: 'PENDING', attemptCount: 0, lastErrorClass: 'SIGNING_UNAVAILABLE', lastStatusCode: null }, `round ${round}`);
    const gap = d.nextAttemptAt!.getTime() - d.lastAttemptAt!.getTime();
    t.true(gap >= SIGNING_RETRY_MS * 0.8 - 1 && gap <= SIGNING_RETRY_MS * 1.2, `round ${round}: gap ${gap}`);
    t.is(scheduledFor(d0._id).at(-1)!.at.getTime(), d.nextAttemptAt!.getTime(), 'tried again on the job schedule');
  }
  t.is(sentTo('/unsigned').length, 0);
  t.like(await endpointDoc(o.endpoints[0].id), { consecutiveFailures: 0, lastErrorClass: null, lastFailureAt: null });
  const listed = await app.request(`/v1/webhooks/${o.endpoints[0].id}/deliveries`, { key: o.admin });
  t.like(listed.body.items[0], { status: 'PENDING', attemptCount: 0, lastErrorClass: 'SIGNING_UNAVAILABLE' });

  // The key is back: the first attempt at the destination is attempt 1.
  await endpoints.updateOne({ _id: o.endpoints[0].id }, { $set: { 'secrets.current': sealed } });
  advanceTo((await delivery(d0._id)).nextAttemptAt!);
  await runJob(ATTEMPT_DELIVERY, { deliveryId: d0._id });
  t.like(await delivery(d0._id), { status: 'DELIVERED', attemptCount: 1 });
  t.deepEqual(sentTo('/unsigned').map((a) => a.headers['Service-Webhook-Attempt']), ['1']);
});

test.serial('a retry then success: DELIVERED, deliveredAt set, consecutiveFailures reset, lastSuccessAt set', async (t) => {
  const o = await setup(['/flaky']);
  scripts.set('/flaky', [
    { verdict: 'RETRY', statusCode: null, errorClass: 'TIMEOUT' },
    { verdict: 'RETRY', statusCode: 429, errorClass: 'HTTP_STATUS', responseSnippet: 'slow down' },
    { verdict: 'SUCCESS', statusCode: 204 },
  ]);
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  const [d0] = await deliveriesOf(o.endpoints[0].id);
  await runJob(ATTEMPT_DELIVERY, { deliveryId: d0._id });
  t.like(await endpointDoc(o.endpoints[0].id), { consecutiveFailures: 1, lastErrorClass: 'TIMEOUT', lastStatusCode: null });
  for (let i = 0; i < 2; i++) {
    advanceTo((await delivery(d0._id)).nextAttemptAt!);
    await runJob(ATTEMPT_DELIVERY, { deliveryId: d0._id });
  }
  const d = await delivery(d0._id);
  t.like(d, { status: 'DELIVERED', attemptCount: 3, lastStatusCode: 204, lastErrorClass: null, lastResponseSnippet: null, nextAttemptAt: null });
  t.truthy(d.deliveredAt);
  const e = await endpointDoc(o.endpoints[0].id);
  t.like(e, { consecutiveFailures: 0, lastStatusCode: 204 });
  t.truthy(e.lastSuccessAt);
  t.truthy(e.lastFailureAt);
  // Through the API as well.
  const api = await app.request(`/v1/webhooks/${o.endpoints[0].id}/deliveries`, { key: o.admin });
  t.like(api.body.items[0], { status: 'DELIVERED', attemptCount: 3, lastStatusCode: 204 });
  t.regex(api.body.items[0].deliveredAt, /Z$/);
});

test.serial('a permanent failure (404, 301) is FAILED at once: no retry scheduled, none made by the sweep', async (t) => {
  const o = await setup(['/gone', '/moved']);
  scripts.set('/gone', [{ verdict: 'PERMANENT', statusCode: 404, errorClass: 'HTTP_STATUS', responseSnippet: 'no such hook' }]);
  scripts.set('/moved', [{ verdict: 'PERMANENT', statusCode: 301, errorClass: 'REDIRECT', responseSnippet: '' }]);
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  for (const ep of o.endpoints) {
    const [d0] = await deliveriesOf(ep.id);
    await runJob(ATTEMPT_DELIVERY, { deliveryId: d0._id });
    const d = await delivery(d0._id);
    t.like(d, { status: 'FAILED', attemptCount: 1, nextAttemptAt: null });
    t.is(scheduledFor(d0._id).length, 1);
    t.like(await endpointDoc(ep.id), { status: 'ACTIVE', consecutiveFailures: 1 });
  }
  offset += 30 * 3600_000;
  await runJob(ATTEMPT_DUE_DELIVERIES);
  t.is(sentTo('/gone').length, 1);
  t.is(sentTo('/moved').length, 1);
});

test.serial('two workers attempting the same delivery at once send it once (lease)', async (t) => {
  const o = await setup(['/race']);
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  const [d0] = await deliveriesOf(o.endpoints[0].id);
  let open!: () => void;
  sendGate = new Promise<void>((resolve) => (open = resolve));
  const first = attemptDelivery(app.deps, d0._id);
  while (sentTo('/race').length === 0) await new Promise((r) => setImmediate(r));
  const second = await attemptDelivery(app.deps, d0._id);
  const swept = runJob(ATTEMPT_DUE_DELIVERIES);
  open();
  sendGate = null;
  const [outcome] = await Promise.all([first, swept]);
  t.is(second.kind, 'NOT_DUE');
  t.is(outcome.kind, 'ATTEMPTED');
  t.is(sentTo('/race').length, 1);
  t.like(await delivery(d0._id), { status: 'DELIVERED', attemptCount: 1 });
});

test.serial('an endpoint that does not answer holds at most its cap of attempts: the sweep delivers the others, and its own resume as attempts end', async (t) => {
  const o = await setup(['/slow', '/fast']);
  for (let i = 0; i < 6; i++) await purchase(o.buyer, String(1200 + i));
  await runJob(DISPATCH_EVENTS);
  const slow = o.endpoints[0].id;
  let answer!: () => void;
  hanging.set('/slow', new Promise<void>((resolve) => (answer = resolve)));
  const scheduledBefore = scheduled.length;
  // The sweep alone (no per-attempt job runs here): four attempts at a time.
  const swept = attemptDueDeliveries(app.deps, { concurrency: 4 });
  const deadline = Date.now() + 5000;
  while (sentTo('/fast').length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.is(sentTo('/fast').length, 6, 'every delivery to the answering endpoint was made while the other hung');
  t.is(sentTo('/slow').length, MAX_IN_FLIGHT_PER_ENDPOINT);
  const waiting = (await deliveriesOf(slow)).filter((d) => d.attemptCount === 0 && d.leaseToken === null);
  t.is(waiting.length, 6 - MAX_IN_FLIGHT_PER_ENDPOINT, 'the rest stay due, not claimed');
  t.true(waiting.every((d) => d.status === 'PENDING' && d.nextAttemptAt!.getTime() <= now().getTime()));

  answer();
  hanging.delete('/slow');
  await swept;
  // Each attempt that ended put the endpoint's next due deliveries back on the schedule; run them as
  // the worker would, until nothing more is scheduled.
  for (let seen = scheduledBefore; seen < scheduled.length; seen++) {
    const job = scheduled[seen];
    if (job.name === ATTEMPT_DELIVERY) await runJob(ATTEMPT_DELIVERY, job.data);
  }
  t.deepEqual((await deliveriesOf(slow)).map((d) => d.status), Array(6).fill('DELIVERED'));
  t.is(sentTo('/slow').length, 6);
});

test.serial('an organisation whose endpoints all hang holds at most its cap of attempts; the rest stay due and are resumed, endpoint after endpoint, as attempts end', async (t) => {
  const paths = ['/org0', '/org1', '/org2', '/org3', '/org4'];
  const o = await setup(paths);
  for (let i = 0; i < 2; i++) await purchase(o.buyer, String(1200 + i));
  await runJob(DISPATCH_EVENTS);
  let answer!: () => void;
  const gate = new Promise<void>((resolve) => (answer = resolve));
  for (const path of paths) hanging.set(path, gate);
  const scheduledBefore = scheduled.length;
  // The sweep alone, ten at a time as a worker runs them: each of the 5 endpoints is under its own cap of 2.
  const swept = attemptDueDeliveries(app.deps, { concurrency: 10 });
  const sentToOrg = () => paths.flatMap(sentTo).length;
  const deadline = Date.now() + 5000;
  while (sentToOrg() < MAX_IN_FLIGHT_PER_ORGANIZATION && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const all = async () => (await Promise.all(o.endpoints.map((ep) => deliveriesOf(ep.id)))).flat();
  // ...and the endpoint of every delivery not claimed has had an attempt turned away.
  const turnedAway = () => new Set(attemptSlots(app.deps).waiting().map((k) => k.endpointId));
  const unclaimed = async () => (await all()).filter((d) => d.leaseToken === null).map((d) => d.endpointId);
  while (!(await unclaimed()).every((id) => turnedAway().has(id)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.is(sentToOrg(), MAX_IN_FLIGHT_PER_ORGANIZATION);
  const waiting = (await all()).filter((d) => d.attemptCount === 0 && d.leaseToken === null);
  t.is(waiting.length, 10 - MAX_IN_FLIGHT_PER_ORGANIZATION, 'the rest stay due, not claimed');
  t.true(waiting.every((d) => d.status === 'PENDING' && d.nextAttemptAt!.getTime() <= now().getTime()));

  answer();
  for (const path of paths) hanging.delete(path);
  await swept;
  for (let seen = scheduledBefore; seen < scheduled.length; seen++) {
    const job = scheduled[seen];
    if (job.name === ATTEMPT_DELIVERY) await runJob(ATTEMPT_DELIVERY, job.data);
  }
  t.deepEqual((await all()).map((d) => d.status), Array(10).fill('DELIVERED'));
  t.is(sentToOrg(), 10);
});

test.serial('a crash loses nothing: a lost schedule and an expired lease are picked up by the recurring sweep', async (t) => {
  const o = await setup(['/crash']);
  await purchase(o.buyer);
  await purchase(o.buyer, '1300');
  await runJob(DISPATCH_EVENTS);
  const [lost, held] = await deliveriesOf(o.endpoints[0].id);
  // `held` was claimed by a worker that died mid-attempt: its lease is still running.
  await webhookCollections(app.store.db).deliveries.updateOne({ _id: held._id }, { $set: { leaseUntil: new Date(now().getTime() + 60_000), leaseToken: 'dead-worker' } });
  // `lost` never got its job (the process died after the commit): nobody runs scheduled jobs here.
  await runJob(ATTEMPT_DUE_DELIVERIES);
  t.is((await delivery(lost._id)).status, 'DELIVERED');
  t.like(await delivery(held._id), { status: 'PENDING', attemptCount: 0 });
  // Once the dead worker's lease runs out, the recurring sweep (declared as the worker does) delivers it.
  offset += 61_000;
  const before = completed.size;
  await scheduleRecurringWebhookJobs(agenda, { dispatch: '1 hour', sweep: 100 });
  while ((await delivery(held._id)).status === 'PENDING') await new Promise((r) => setTimeout(r, 25));
  t.like(await delivery(held._id), { status: 'DELIVERED', attemptCount: 1 });
  t.true(completed.size > before);
  await agenda.cancel({ name: ATTEMPT_DUE_DELIVERIES });
  await agenda.cancel({ name: DISPATCH_EVENTS });
});

test.serial('an endpoint disabled and re-enabled during an attempt does not get that delivery again', async (t) => {
  const o = await setup(['/flapping']);
  scripts.set('/flapping', [{ verdict: 'RETRY', statusCode: null, errorClass: 'TIMEOUT' }, { verdict: 'SUCCESS', statusCode: 200 }]);
  const id = o.endpoints[0].id;
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  const [d0] = await deliveriesOf(id);
  let open!: () => void;
  sendGate = new Promise<void>((resolve) => (open = resolve));
  const attempt = attemptDelivery(app.deps, d0._id);
  while (sentTo('/flapping').length === 0) await new Promise((r) => setImmediate(r));
  // While the attempt is in flight (its lease held, so the disable's cancel passes it by).
  t.is((await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'DISABLED' } })).status, 200);
  t.is((await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'ACTIVE' } })).status, 200);
  open();
  sendGate = null;
  const outcome = await attempt;
  t.like(outcome, { kind: 'ATTEMPTED', status: 'CANCELLED', nextAttemptAt: null });
  t.like(await delivery(d0._id), { status: 'CANCELLED', nextAttemptAt: null, attemptCount: 1 });
  offset += 3600_000;
  await runJob(ATTEMPT_DUE_DELIVERIES);
  t.is(sentTo('/flapping').length, 1, 'not replayed after re-enabling');
});

test.serial('a delivery held by a dead worker while its endpoint was disabled is not replayed after re-enabling', async (t) => {
  const o = await setup(['/dead-flap']);
  const id = o.endpoints[0].id;
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  const [d0] = await deliveriesOf(id);
  // Claimed by a worker that then died: its lease still runs, so the disable's cancel passes it by.
  await webhookCollections(app.store.db).deliveries.updateOne({ _id: d0._id }, { $set: { leaseUntil: new Date(now().getTime() + 60_000), leaseToken: 'dead-worker' } });
  t.is((await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'DISABLED' } })).status, 200);
  t.is((await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'ACTIVE' } })).status, 200);
  offset += 61_000;
  await runJob(ATTEMPT_DUE_DELIVERIES);
  t.is(sentTo('/dead-flap').length, 0, 'old traffic is not replayed after re-enabling');
  t.like(await delivery(d0._id), { status: 'CANCELLED', nextAttemptAt: null, attemptCount: 0 });
  // What happens after re-enabling is delivered as usual.
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  await runJob(ATTEMPT_DUE_DELIVERIES);
  t.is(sentTo('/dead-flap').length, 1);
});

test.serial('a cancellation of the disable still running after re-enabling cancels only what was pending when it was disabled', async (t) => {
  const o = await setup(['/long-cancel']);
  const id = o.endpoints[0].id;
  t.is((await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'DISABLED' } })).status, 200);
  const { disabledAt } = await endpointDoc(id);
  t.is((await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'ACTIVE' } })).status, 200);
  offset += 1000;
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  const [fresh] = await deliveriesOf(id);
  // The disable's cancellation, a long backlog away, reaches its last batch only now.
  await cancelPendingDeliveriesOf(app.deps, id, { keepTests: true, createdUpTo: disabledAt! });
  t.like(await delivery(fresh._id), { status: 'PENDING' }, 'an event after re-enabling is not cancelled');
  await runJob(ATTEMPT_DELIVERY, { deliveryId: fresh._id });
  t.is(sentTo('/long-cancel').length, 1);
});

test.serial('events from before the disable, or from while it was disabled, are not delivered after re-enabling, however late they are dispatched', async (t) => {
  const o = await setup(['/late-dispatch']);
  const id = o.endpoints[0].id;
  await purchase(o.buyer); // recorded while ACTIVE, not yet dispatched
  offset += 1000;
  t.is((await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'DISABLED' } })).status, 200);
  offset += 1000;
  await purchase(o.buyer); // recorded while DISABLED
  offset += 1000;
  t.is((await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'ACTIVE' } })).status, 200);
  offset += 1000;
  await runJob(DISPATCH_EVENTS);
  await runJob(ATTEMPT_DUE_DELIVERIES);
  t.is(sentTo('/late-dispatch').length, 0, 'old traffic is not replayed after re-enabling');
  // What happens after re-enabling is delivered as usual.
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  await runJob(ATTEMPT_DUE_DELIVERIES);
  t.is(sentTo('/late-dispatch').length, 1);
});

test.serial('disabling cancels pending deliveries (tests excepted); revoking cancels everything; neither counts as a failure', async (t) => {
  const o = await setup(['/paused']);
  scripts.set('/paused', [{ verdict: 'RETRY', statusCode: 500, errorClass: 'HTTP_STATUS' }, { verdict: 'SUCCESS', statusCode: 200 }]);
  const id = o.endpoints[0].id;
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  const [d0] = await deliveriesOf(id);
  await runJob(ATTEMPT_DELIVERY, { deliveryId: d0._id });
  t.is((await delivery(d0._id)).status, 'PENDING');
  await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'DISABLED' } });
  t.like(await delivery(d0._id), { status: 'CANCELLED', nextAttemptAt: null, attemptCount: 1 });
  // While disabled: no new events reach it, but the test operation does.
  await purchase(o.buyer);
  await runJob(DISPATCH_EVENTS);
  t.is((await deliveriesOf(id)).length, 1);
  const queued = await app.request(`/v1/webhooks/${id}/test`, { key: o.admin, method: 'POST' });
  t.is(queued.status, 202);
  await runJob(ATTEMPT_DELIVERY, { deliveryId: queued.body.deliveryId });
  t.like(await delivery(queued.body.deliveryId), { status: 'DELIVERED', eventType: 'webhook.test' });
  const sentTest = sentTo('/paused').at(-1)!;
  t.is(JSON.parse(sentTest.body.toString()).type, 'webhook.test');

  // Revoked between commit and attempt: the attempt cancels instead of sending.
  await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { status: 'ACTIVE' } });
  const again = await app.request(`/v1/webhooks/${id}/test`, { key: o.admin, method: 'POST' });
  await webhookCollections(app.store.db).endpoints.updateOne({ _id: id }, { $set: { status: 'REVOKED' }, $unset: { secrets: '' } });
  const count = sentTo('/paused').length;
  t.is((await attemptDelivery(app.deps, again.body.deliveryId)).kind, 'CANCELLED');
  t.is(sentTo('/paused').length, count);
  t.like(await delivery(again.body.deliveryId), { status: 'CANCELLED', attemptCount: 0 });
  t.like(await endpointDoc(id), { consecutiveFailures: 0 });
});

test.serial('a type taken out of subscribedTypes is not sent again: its pending retries are cancelled, the types kept still retried', async (t) => {
  const o = await setup(['/narrowed'], ['purchase.approved', 'purchase.rejected']);
  scripts.set('/narrowed', [{ verdict: 'RETRY', statusCode: 503, errorClass: 'HTTP_STATUS' }]);
  const id = o.endpoints[0].id;
  await purchase(o.buyer); // purchase.approved
  await purchase(o.buyer, '99999999'); // purchase.rejected (over the per-request limit)
  await runJob(DISPATCH_EVENTS);
  const pending = await deliveriesOf(id);
  t.deepEqual(pending.map((d) => d.eventType).sort(), ['purchase.approved', 'purchase.rejected']);
  for (const d of pending) await runJob(ATTEMPT_DELIVERY, { deliveryId: d._id });
  t.is(sentTo('/narrowed').length, 2);
  t.is((await app.request(`/v1/webhooks/${id}`, { method: 'PATCH', key: o.admin, body: { subscribedTypes: ['purchase.rejected'] } })).status, 200);
  offset += 2 * MIN;
  await runJob(ATTEMPT_DUE_DELIVERIES);
  const types = sentTo('/narrowed').slice(2).map((s) => JSON.parse(s.body.toString()).type);
  t.deepEqual(types, ['purchase.rejected'], 'only the type still subscribed is retried');
  const approved = pending.find((d) => d.eventType === 'purchase.approved')!;
  t.like(await delivery(approved._id), { status: 'CANCELLED', nextAttemptAt: null, attemptCount: 1 });
});

test.serial('rotation: two signature entries (old and new secret) for 24 hours, then one; retireImmediately gives one at once', async (t) => {
  const o = await setup(['/rotating']);
  const ep = o.endpoints[0];
  const rotated = (await app.request(`/v1/webhooks/${ep.id}/rotate-secret`, { key: o.admin, method: 'POST' })).body;
  const sendTest = async () => {
    const q = await app.request(`/v1/webhooks/${ep.id}/test`, { key: o.admin, method: 'POST' });
    await runJob(ATTEMPT_DELIVERY, { deliveryId: q.body.deliveryId });
    return sentTo('/rotating').at(-1)!;
  };
  const verifies = (s: Sent, secret: string) =>
    verifySignature({ header: s.headers[WEBHOOK_SIGNATURE_HEADER], timestamp: s.headers[WEBHOOK_TIMESTAMP_HEADER], body: s.body, secret, now: s.at });
  const entries = (s: Sent) => s.headers[WEBHOOK_SIGNATURE_HEADER].split(',');

  const during = await sendTest();
  t.is(entries(during).length, 2);
  t.true(verifies(during, rotated.secret));
  t.true(verifies(during, ep.secret));
  t.true(verifies({ ...during, headers: { ...during.headers, [WEBHOOK_SIGNATURE_HEADER]: entries(during)[0] } }, rotated.secret), 'the new secret signs first');

  offset += 24 * 3600_000 + 1000;
  const after = await sendTest();
  t.is(entries(after).length, 1);
  t.true(verifies(after, rotated.secret));
  t.false(verifies(after, ep.secret));

  const again = (await app.request(`/v1/webhooks/${ep.id}/rotate-secret`, { key: o.admin, body: { retireImmediately: true } })).body;
  const retired = await sendTest();
  t.is(entries(retired).length, 1);
  t.true(verifies(retired, again.secret));
  t.false(verifies(retired, rotated.secret));
});

test.serial('after WEBHOOK_ENCRYPTION_KEY changes, rotating as the docs say delivers at once, signed with the new secret only', async (t) => {
  const o = await setup(['/new-key']);
  const ep = o.endpoints[0];
  // The same store served under another key (docs/integrate/webhooks.md, "Turning webhooks on").
  const moved = await startApp({ store: app.store, env: { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex') }, now, scheduler: recordingScheduler });
  t.teardown(() => moved.close());
  configureWebhooks(moved.deps, { send: fakeSend, lookup });
  const rotated = await moved.request(`/v1/webhooks/${ep.id}/rotate-secret`, { key: o.admin, method: 'POST' });
  t.is(rotated.status, 200, rotated.text);
  const queued = await moved.request(`/v1/webhooks/${ep.id}/test`, { key: o.admin, method: 'POST' });
  t.like(await attemptDelivery(moved.deps, queued.body.deliveryId), { kind: 'ATTEMPTED', status: 'DELIVERED' });
  const [s] = sentTo('/new-key');
  t.is(s.headers[WEBHOOK_SIGNATURE_HEADER].split(',').length, 1, 'the old secret cannot be opened: it cannot sign');
  t.true(verifySignature({ header: s.headers[WEBHOOK_SIGNATURE_HEADER], timestamp: s.headers[WEBHOOK_TIMESTAMP_HEADER], body: s.body, secret: rotated.body.secret, now: s.at }));
});

// The loopback answers are refused here because this app runs without WEBHOOK_UNSAFE_ALLOW_LOCAL; the
// other classes, and the connection going to the checked address, are proven against real receivers in
// hostile-receivers.test.ts.
for (const answer of [['93.184.215.14', '10.1.2.3'], ['127.0.0.1'], ['::1'], ['::ffff:127.0.0.1'], ['0.0.0.0'], ['169.254.169.254'], ['100.64.0.1'], ['fc00::1'], ['fe80::1']]) {
  test.serial(`before every attempt the destination is checked again: a name now resolving to ${answer.join(', ')} is not contacted`, async (t) => {
    const o = await setup(['/rebind']);
    // The endpoint passed at creation; now DNS answers with a refused address. Use the real sender.
    await webhookCollections(app.store.db).endpoints.updateOne({ _id: o.endpoints[0].id }, { $set: { url: 'https://rebound.pipeline-test.com/rebind' } });
    DNS['rebound.pipeline-test.com'] = answer;
    configureWebhooks(app.deps, { send: sendWebhook });
    try {
      const q = await app.request(`/v1/webhooks/${o.endpoints[0].id}/test`, { key: o.admin, method: 'POST' });
      await runJob(ATTEMPT_DELIVERY, { deliveryId: q.body.deliveryId });
      const d: WebhookDeliveryDoc = await delivery(q.body.deliveryId);
      // A connection attempt would have ended as CONNECTION (nothing listens on port 443 there) or TIMEOUT.
      t.like(d, { status: 'PENDING', attemptCount: 1, lastErrorClass: 'DESTINATION_NOT_PERMITTED', lastStatusCode: null });
      t.truthy(d.nextAttemptAt);
      t.is(sentTo('/rebind').length, 0);
    } finally {
      configureWebhooks(app.deps, { send: fakeSend });
    }
  });
}
