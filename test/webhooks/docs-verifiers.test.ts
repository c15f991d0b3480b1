// The receiver code docs/integrate/webhooks.md shows, taken from the page itself (not retyped), run
// against real deliveries to a real HTTPS receiver: the Node function imported from the page's `js`
// block, the Python one run by python3 from its `python` block. Both must accept what the service
// sends, refuse it altered, refuse it outside the 300 s tolerance, and follow a rotation as
// docs/reference/contract.md §6.4 and §8 give it: both secrets for 24 hours, then only the new one. And
// what the receiver got is what schemas/openapi.json documents for its type, body and headers, for an
// endpoint registered with the page's own example.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createTestPki, startReceiver, type Receiver, type RecordedRequest, type TestPki } from '../helpers/https-receiver.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { startChildService, waitFor, type ChildService } from './fixtures/child-service.ts';
import { checkDelivery } from '../helpers/contract.ts';

const page = readFileSync(new URL('../../docs/integrate/webhooks.md', import.meta.url), 'utf8');
const block = (lang: string): string => {
  const found = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(page);
  if (!found) throw new Error(`docs/integrate/webhooks.md has no ${lang} block`);
  return found[1];
};

type Headers = RecordedRequest['headers'];
let dir: string;
let nodeVerify: (rawBody: Buffer, headers: Headers, secret: string, nowMs?: number) => boolean;

/** The page's Python verify(), in a fresh python3 process, over the request as received. */
function pythonVerify(rawBody: Buffer, headers: Headers, secret: string, nowMs: number): boolean {
  const input = JSON.stringify({ body: rawBody.toString('base64'), headers, secret, now: nowMs / 1000 });
  const harness = `${block('python')}
import json, sys
given = json.load(sys.stdin)
print(verify(base64.b64decode(given['body']), given['headers'], given['secret'], given['now']))
`;
  writeFileSync(join(dir, 'verify.py'), harness);
  return execFileSync('python3', [join(dir, 'verify.py')], { input }).toString().trim() === 'True';
}

const verifiers = { node: (b: Buffer, h: Headers, s: string, now: number) => nodeVerify(b, h, s, now), python: pythonVerify };

let pki: TestPki;
let api: ChildService;
let receiver: Receiver;
let clockOffset = 0;
const serviceNow = () => Date.now() + clockOffset;

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'docs-verifiers-'));
  writeFileSync(join(dir, 'verify.mjs'), block('js'));
  nodeVerify = (await import(pathToFileURL(join(dir, 'verify.mjs')).href)).verify;
  pki = await createTestPki();
  api = await startChildService(pki);
  receiver = await startReceiver({ ...pki.trusted, responses: [{ status: 204 }] });
});

test.after.always(async () => {
  api?.stop();
  await receiver?.close();
  await pki?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function testDelivery(admin: string, webhookId: string): Promise<RecordedRequest> {
  const before = receiver.requests.length;
  const queued = await api.request(`/v1/webhooks/${webhookId}/test`, { key: admin, method: 'POST' });
  if (queued.status !== 202) throw new Error(queued.text);
  return waitFor('the test delivery', () => receiver.requests.length > before && receiver.requests[before]);
}

test.serial('the documented verifiers, as printed, accept real deliveries, refuse altered or stale ones, and follow a rotation', async (t) => {
  const o = await applyManifest(api, acmeManifest('docs-verifiers'));
  const admin = o.keys['admin-key'];
  const created = await api.request('/v1/webhooks', { key: admin, body: { url: `${receiver.origin}/hooks`, subscribedTypes: ['purchase.approved'] } });
  t.is(created.status, 201, created.text);
  const { id, secret: first } = created.body;

  const delivered = await testDelivery(admin, id);
  for (const [name, verify] of Object.entries(verifiers)) {
    t.true(verify(delivered.body, delivered.headers, first, serviceNow()), `${name}: a real delivery`);
    t.false(verify(Buffer.from(delivered.body.toString().replace('"webhook.test"', '"webhook.tesT"')), delivered.headers, first, serviceNow()), `${name}: an altered body`);
    t.false(verify(delivered.body, delivered.headers, first, serviceNow() + 301_000), `${name}: 301 s later`);
    t.false(verify(delivered.body, delivered.headers, first, serviceNow() - 305_000), `${name}: 305 s earlier (the timestamp is whole seconds)`);
  }

  const rotated = await api.request(`/v1/webhooks/${id}/rotate-secret`, { key: admin, method: 'POST' });
  t.is(rotated.status, 200, rotated.text);
  const second: string = rotated.body.secret;
  await api.ask('advance', { ms: 23 * 3600_000 });
  clockOffset += 23 * 3600_000;
  const during = await testDelivery(admin, id);
  for (const [name, verify] of Object.entries(verifiers)) {
    t.true(verify(during.body, during.headers, first, serviceNow()), `${name}: the old secret 23 h after the rotation`);
    t.true(verify(during.body, during.headers, second, serviceNow()), `${name}: the new secret 23 h after the rotation`);
  }

  await api.ask('advance', { ms: 3600_000 + 60_000 });
  clockOffset += 3600_000 + 60_000;
  const after = await testDelivery(admin, id);
  for (const [name, verify] of Object.entries(verifiers)) {
    t.false(verify(after.body, after.headers, first, serviceNow()), `${name}: the old secret past 24 h`);
    t.true(verify(after.body, after.headers, second, serviceNow()), `${name}: the new secret past 24 h`);
  }
});

test.serial('every purchase event as a receiver gets it is the documented body and headers, amounts as strings of minor units', async (t) => {
  const o = await applyManifest(api, acmeManifest('docs-envelopes'));
  const admin = o.keys['admin-key'];
  // The page's registration, its body as printed, pointed at this receiver.
  const registration = JSON.parse(/-d '(.*)'/.exec(block('sh'))![1]);
  const types: string[] = registration.subscribedTypes;
  const created = await api.request('/v1/webhooks', { key: admin, body: { ...registration, url: `${receiver.origin}/envelopes` } });
  t.is(created.status, 201, created.text);
  t.regex(created.body.secret, /^cmp_whs_/);
  const before = receiver.requests.length;
  for (const amountMinor of ['1200', '99999999', '25000']) {
    const res = await api.request('/v1/purchase-requests', { key: o.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor, reason: 'envelopes' } });
    t.is(res.status, 201, res.text);
  }
  t.is((await api.request(`/v1/webhooks/${created.body.id}/test`, { key: admin, method: 'POST' })).status, 202);
  const got = await waitFor('four deliveries', () => receiver.requests.length >= before + 4 && receiver.requests.slice(before));
  const byType = new Map(got.map((r) => [JSON.parse(r.body.toString()).type as string, r]));
  t.deepEqual([...byType.keys()].sort(), [...types, 'webhook.test'].sort());
  for (const r of got) t.notThrows(() => checkDelivery(r.headers, r.body));
  // The check is not a rubber stamp: an amount as a number, or a header missing, is refused.
  const approved = JSON.parse(byType.get('purchase.approved')!.body.toString());
  t.throws(() => checkDelivery(byType.get('purchase.approved')!.headers, Buffer.from(JSON.stringify({ ...approved, data: { ...approved.data, amountMinor: 1200 } }))));
  t.throws(() => checkDelivery({ ...byType.get('purchase.approved')!.headers, 'service-webhook-attempt': undefined }, byType.get('purchase.approved')!.body));
  for (const type of types) {
    const { data } = JSON.parse(byType.get(type)!.body.toString());
    t.true(typeof data.amountMinor === 'string' && ['1200', '99999999', '25000'].includes(data.amountMinor), type);
  }
});
