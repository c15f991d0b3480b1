// End to end against real local HTTPS receivers with their own certificate authority (issue 5,
// "What must be true"). The service (API + Agenda worker) runs in ONE child process started with
// NODE_EXTRA_CA_CERTS, Node's standard mechanism for trusting an extra CA; this process plays the
// receivers and an independent verifier written from docs/reference/contract.md §6.4 alone (not signing.ts).
import test from 'ava';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createTestPki, startReceiver, type ProgrammedResponse, type Receiver, type RecordedRequest, type TestPki } from '../helpers/https-receiver.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { startChildService, waitFor, type ChildService } from './fixtures/child-service.ts';


// ---- The independent verifier: the receiver code docs/integrate/webhooks.md shows. ----
function verify(rawBody: Buffer, headers: Record<string, string | string[] | undefined>, secret: string, nowMs: number): boolean {
  const timestamp = String(headers['service-webhook-timestamp'] ?? '');
  const signatures = String(headers['service-webhook-signature'] ?? '');
  if (!/^\d+$/.test(timestamp) || Math.abs(nowMs / 1000 - Number(timestamp)) > 300) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`v1:${timestamp}:`).update(rawBody).digest('base64url'));
  return signatures.split(',').some((entry) => {
    const [version, signature = ''] = entry.trim().split('=', 2);
    const given = Buffer.from(signature);
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

// ---- The child service and a small client for it. ----
let pki: TestPki;
let api: ChildService;
let clockOffset = 0;

const ask = (cmd: string, extra: Record<string, unknown> = {}) => api.ask(cmd, extra);

async function advance(ms: number) {
  await ask('advance', { ms });
  clockOffset += ms;
}

test.before(async () => {
  pki = await createTestPki();
  api = await startChildService(pki);
});

test.after.always(async () => {
  api?.stop();
  await pki?.cleanup();
});


let orgs = 0;
async function organisation() {
  const applied = await applyManifest(api, acmeManifest(`e2e${++orgs}`));
  return { ...applied, admin: applied.keys['admin-key'], buyer: applied.keys['buyer-key'] };
}

async function withReceiver<T>(responses: ProgrammedResponse[], fn: (r: Receiver) => Promise<T>): Promise<T> {
  const receiver = await startReceiver({ ...pki.trusted, responses });
  try {
    return await fn(receiver);
  } finally {
    await receiver.close();
  }
}

async function endpoint(admin: string, url: string, subscribedTypes = ['purchase.approved', 'purchase.rejected', 'purchase.approval_required']) {
  const res = await api.request('/v1/webhooks', { key: admin, body: { url, subscribedTypes } });
  if (res.status !== 201) throw new Error(`endpoint refused: ${res.text}`);
  return res.body as { id: string; secret: string };
}

const deliveries = async (admin: string, id: string) => (await api.request(`/v1/webhooks/${id}/deliveries`, { key: admin })).body.items as any[];
const serviceNow = () => Date.now() + clockOffset;
const header = (r: RecordedRequest, name: string) => String(r.headers[name.toLowerCase()] ?? '');

// One service, one clock: one scenario at a time.

test.serial('a purchase produces a signed delivery that an independent verifier accepts', async (t) => {
  await withReceiver([{ status: 200, body: 'thanks' }], async (receiver) => {
    const o = await organisation();
    const ep = await endpoint(o.admin, `${receiver.origin}/hooks/purchases?tenant=acme`);
    const submitted = await api.request('/v1/purchase-requests', { key: o.buyer, body: { merchant: 'Paper Co', amountMinor: '1200', reason: 'printer paper' } });
    t.is(submitted.status, 201, submitted.text);

    const [req] = await waitFor('the delivery', () => receiver.requests.length > 0 && receiver.requests);
    t.is(req.method, 'POST');
    t.is(req.path, '/hooks/purchases?tenant=acme');
    t.is(header(req, 'content-type'), 'application/json');
    t.is(header(req, 'Service-Webhook-Attempt'), '1');
    t.regex(header(req, 'Service-Webhook-Signature'), /^v1=[A-Za-z0-9_-]{43}$/);
    t.true(verify(req.body, req.headers, ep.secret, serviceNow()), 'signature verifies over the raw bytes');
    t.true(verify(req.body, req.headers, ep.secret, Date.now()), 'and against the receiver’s own clock');
    // The verifier is not a rubber stamp.
    t.false(verify(Buffer.concat([req.body, Buffer.from(' ')]), req.headers, ep.secret, serviceNow()), 'one extra byte fails');
    t.false(verify(req.body, req.headers, 'cmp_whs_' + 'x'.repeat(43), serviceNow()), 'another secret fails');
    t.false(verify(req.body, req.headers, ep.secret, serviceNow() + 301_000), 'outside 300 s fails');

    const envelope = JSON.parse(req.body.toString('utf8'));
    t.deepEqual(Object.keys(envelope), ['id', 'type', 'apiVersion', 'createdAt', 'accountId', 'data']);
    t.like(envelope, { type: 'purchase.approved', apiVersion: '2026-09-01', accountId: o.organizationId });
    t.is(envelope.id, header(req, 'Service-Webhook-Id'));
    t.like(envelope.data, { resolvedBy: 'ENGINE', approvalRequestId: null });
    t.true(submitted.text.includes(envelope.data.purchaseRequestId));

    const [d] = await waitFor('the recorded success', async () => {
      const items = await deliveries(o.admin, ep.id);
      return items[0]?.status === 'DELIVERED' && items;
    });
    t.like(d, { eventId: envelope.id, eventType: 'purchase.approved', attemptCount: 1, lastStatusCode: 200, lastErrorClass: null, lastResponseSnippet: null });
    t.is(typeof d.lastDurationMs, 'number');
    const e = (await api.request(`/v1/webhooks/${ep.id}`, { key: o.admin })).body;
    t.like(e, { consecutiveFailures: 0, lastStatusCode: 200 });
    t.truthy(e.lastSuccessAt);
  });
});

test.serial('500 then 200: the retry carries the same body and event id with a new timestamp', async (t) => {
  await withReceiver([{ status: 500, body: 'database on fire' }, { status: 200 }], async (receiver) => {
    const o = await organisation();
    const ep = await endpoint(o.admin, `${receiver.origin}/retry`);
    const queued = await api.request(`/v1/webhooks/${ep.id}/test`, { key: o.admin, method: 'POST' });
    t.is(queued.status, 202, queued.text);
    t.like(queued.body, { status: 'queued' });

    const first = await waitFor('the failed first attempt to be recorded', async () => {
      const [d] = await deliveries(o.admin, ep.id);
      return d?.attemptCount === 1 && d;
    });
    t.like(first, { status: 'PENDING', lastStatusCode: 500, lastErrorClass: 'HTTP_STATUS', lastResponseSnippet: 'database on fire', deliveredAt: null });
    const wait = Date.parse(first.nextAttemptAt) - Date.parse(first.lastAttemptAt);
    t.true(wait >= 48_000 && wait <= 72_000, `first retry after ~1 min +-20%: ${wait} ms`);
    t.like((await api.request(`/v1/webhooks/${ep.id}`, { key: o.admin })).body, { status: 'ACTIVE', consecutiveFailures: 1, lastStatusCode: 500 });
    t.is(receiver.requests.length, 1);

    await advance(75_000);
    await ask('sweep');
    await waitFor('the retry', () => receiver.requests.length >= 2);
    const [a, b] = receiver.requests;
    t.true(b.body.equals(a.body), 'identical body bytes');
    t.is(header(b, 'Service-Webhook-Id'), header(a, 'Service-Webhook-Id'));
    t.is(header(b, 'Service-Webhook-Id'), queued.body.eventId);
    t.not(header(b, 'Service-Webhook-Timestamp'), header(a, 'Service-Webhook-Timestamp'));
    t.true(Number(header(b, 'Service-Webhook-Timestamp')) - Number(header(a, 'Service-Webhook-Timestamp')) >= 75);
    t.is(header(b, 'Service-Webhook-Attempt'), '2');
    t.true(verify(b.body, b.headers, ep.secret, serviceNow()));
    t.is(JSON.parse(b.body.toString()).type, 'webhook.test');

    const done = await waitFor('the success to be recorded', async () => {
      const [d] = await deliveries(o.admin, ep.id);
      return d?.status === 'DELIVERED' && d;
    });
    t.like(done, { attemptCount: 2, lastStatusCode: 200, nextAttemptAt: null });
    t.like((await api.request(`/v1/webhooks/${ep.id}`, { key: o.admin })).body, { consecutiveFailures: 0 });
  });
});

test.serial('404 and 301 are permanent: not retried, and the redirect is not followed', async (t) => {
  await withReceiver([{ status: 200 }], async (elsewhere) => {
    await withReceiver([{ status: 404, body: 'no such hook' }], async (gone) => {
      await withReceiver([{ status: 301, headers: { location: `${elsewhere.origin}/new-home` }, body: 'moved' }], async (moved) => {
        const o = await organisation();
        const eps = [await endpoint(o.admin, `${gone.origin}/old`), await endpoint(o.admin, `${moved.origin}/old`)];
        for (const ep of eps) t.is((await api.request(`/v1/webhooks/${ep.id}/test`, { key: o.admin, method: 'POST' })).status, 202);
        const finals = [];
        for (const ep of eps) {
          finals.push(await waitFor('a permanent failure', async () => {
            const [d] = await deliveries(o.admin, ep.id);
            return d?.status === 'FAILED' && d;
          }));
        }
        t.like(finals[0], { attemptCount: 1, lastStatusCode: 404, lastErrorClass: 'HTTP_STATUS', lastResponseSnippet: 'no such hook', nextAttemptAt: null });
        t.like(finals[1], { attemptCount: 1, lastStatusCode: 301, lastErrorClass: 'REDIRECT', lastResponseSnippet: 'moved', nextAttemptAt: null });

        // A day and a half later, with the sweep run, still one request each and none elsewhere.
        await advance(36 * 3600_000);
        await ask('sweep');
        t.is(gone.requests.length, 1);
        t.is(moved.requests.length, 1);
        t.is(elsewhere.requests.length, 0);
        for (const ep of eps) {
          const [d] = await deliveries(o.admin, ep.id);
          t.like(d, { status: 'FAILED', attemptCount: 1 });
          t.like((await api.request(`/v1/webhooks/${ep.id}`, { key: o.admin })).body, { status: 'ACTIVE', consecutiveFailures: 1 });
        }
      });
    });
  });
});

test.serial('rotation: two valid signature entries; retireImmediately: one', async (t) => {
  await withReceiver([{ status: 200 }], async (receiver) => {
    const o = await organisation();
    const ep = await endpoint(o.admin, `${receiver.origin}/rotating`);
    const rotated = await api.request(`/v1/webhooks/${ep.id}/rotate-secret`, { key: o.admin, method: 'POST' });
    t.is(rotated.status, 200, rotated.text);
    await api.request(`/v1/webhooks/${ep.id}/test`, { key: o.admin, method: 'POST' });
    const [during] = await waitFor('the first test delivery', () => receiver.requests.length >= 1 && receiver.requests);
    const entries = header(during, 'Service-Webhook-Signature').split(',');
    t.is(entries.length, 2);
    const only = (entry: string) => ({ ...during.headers, 'service-webhook-signature': entry });
    t.true(verify(during.body, only(entries[0]), rotated.body.secret, serviceNow()), 'first entry: the new secret');
    t.true(verify(during.body, only(entries[1]), ep.secret, serviceNow()), 'second entry: the old secret');
    t.true(verify(during.body, during.headers, ep.secret, serviceNow()) && verify(during.body, during.headers, rotated.body.secret, serviceNow()));

    const retired = await api.request(`/v1/webhooks/${ep.id}/rotate-secret`, { key: o.admin, body: { retireImmediately: true } });
    t.is(retired.status, 200, retired.text);
    await api.request(`/v1/webhooks/${ep.id}/test`, { key: o.admin, method: 'POST' });
    const after = await waitFor('the second test delivery', () => receiver.requests.length >= 2 && receiver.requests[1]);
    t.is(header(after, 'Service-Webhook-Signature').split(',').length, 1);
    t.true(verify(after.body, after.headers, retired.body.secret, serviceNow()));
    t.false(verify(after.body, after.headers, rotated.body.secret, serviceNow()));
    t.false(verify(after.body, after.headers, ep.secret, serviceNow()));
  });
});
