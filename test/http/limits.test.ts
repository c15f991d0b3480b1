// Every limit of docs/reference/contract.md §8 on a /v1 query or body, at its exact boundary through real HTTP:
// the limit itself is accepted, one more is refused with the documented status and code (or clamped, where
// the contract says clamped). Webhook bodies (16 KB) and deliveries' `limit` are in test/webhooks/management.test.ts,
// MCP list_purchases' `limit` in test/mcp/mcp.test.ts.
import test from 'ava';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';

let app: TestApp;
let acme: AppliedOrg;

test.before(async () => {
  app = await startApp();
  acme = await applyManifest(app, acmeManifest());
});
test.after.always(() => app?.close());

const KB64 = 64 * 1024;

/** `value` as JSON followed by white space up to exactly `size` bytes: valid JSON of that length. */
const paddedTo = (value: object, size: number) => {
  const text = JSON.stringify(value);
  return text + ' '.repeat(size - Buffer.byteLength(text));
};

const post = (path: string, key: string, raw: string) => app.request(path, { key, raw, headers: { 'content-type': 'application/json' } });

test('64 KB bodies: exactly 65,536 bytes is read, 65,537 is 413 payload_too_large', async (t) => {
  const office = acme.policies.office;
  const purchase = { merchant: 'Staples', amountMinor: '100', reason: 'Pens' };
  const cases: [string, string, object, number][] = [
    ['/v1/purchase-requests', acme.keys['buyer-key'], purchase, 201],
    ['/v1/simulations/current-policies', acme.keys['buyer-key'], purchase, 200],
    ['/v1/simulations/policy-version', acme.keys['admin-key'], { ...purchase, policyVersionId: office.activeVersionId }, 200],
    [`/v1/policies/${office.id}/versions/${office.activeVersionId}/validate`, acme.keys['admin-key'], {}, 200],
    ['/v1/simulations/replay', acme.keys['admin-key'], { policyVersionId: office.activeVersionId, from: '2026-01-01T00:00:00.000Z', to: '2026-02-01T00:00:00.000Z' }, 200],
  ];
  for (const [path, key, body, status] of cases) {
    const at = await post(path, key, paddedTo(body, KB64));
    t.is(at.status, status, `${path} at the limit: ${at.text.slice(0, 200)}`);
    const over = await post(path, key, paddedTo(body, KB64 + 1));
    t.is(over.status, 413, path);
    t.is(over.body.error.code, 'payload_too_large', path);
  }
});

test('pageSize: 100 is 100, 101 is clamped to 100', async (t) => {
  const key = acme.keys['admin-key'];
  for (const [given, used] of [['100', 100], ['101', 100], ['99', 99]] as const) {
    const res = await app.request(`/v1/policies?pageSize=${given}`, { key });
    t.is(res.status, 200);
    t.is(res.body.pagination.pageSize, used, given);
  }
});

test('changes `limit`: 200 is accepted, 201 and 0 are 400 invalid_request OUT_OF_RANGE; leading zeros are the same number', async (t) => {
  const key = acme.keys['admin-key'];
  const body = { policyVersionId: acme.policies.office.activeVersionId, from: '2026-01-01T00:00:00.000Z', to: '2026-02-01T00:00:00.000Z' };
  const replay = (query: string) => app.request(`/v1/simulations/replay?${query}`, { key, body });
  for (const ok of ['limit=200', 'limit=1', 'limit=0200', 'limit=00001']) t.is((await replay(ok)).status, 200, ok);
  for (const bad of ['limit=201', 'limit=0', 'limit=-1', 'limit=1.0', 'limit=1e2', 'limit=', 'limit=99999999999999999999']) {
    const res = await replay(bad);
    t.is(res.status, 400, bad);
    t.deepEqual(res.body.error.issues.map((i: any) => [i.path, i.code]), [['limit', 'OUT_OF_RANGE']], bad);
  }
});
