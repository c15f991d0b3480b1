// The operator CLI (scripts/admin.ts) against a running service, as a person would use it.
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ADMIN_TOKEN, startApp, type TestApp } from '../helpers/app.ts';

const run = promisify(execFile);
let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

async function cli(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['scripts/admin.ts', ...args], { env: { ...process.env, SERVICE_URL: app.url, ADMIN_TOKEN, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err: any) {
    return { code: err.code as number, stdout: err.stdout as string, stderr: err.stderr as string };
  }
}

test('apply prints the manifest result with the new keys, then an answer goes through', async (t) => {
  const applied = await cli(['apply', 'examples/acme.yaml']);
  t.is(applied.code, 0, applied.stderr);
  const result = JSON.parse(applied.stdout);
  t.is(result.organization.handle, 'acme');
  const buyerKey = result.apiKeys['buyer-key'].key;
  t.regex(buyerKey, /^cmp_live_/);
  const created = await app.request('/v1/purchase-requests', { key: buyerKey, body: { merchant: 'Paper Co', amountMinor: 30000, reason: 'chairs' } });
  t.is(created.body.decision.outcome, 'REQUIRES_APPROVAL');
  const answered = await cli(['answer', created.body.purchaseRequest.id, 'approve', '--person', 'ana', '--comment', 'ok']);
  t.is(answered.code, 0, answered.stderr);
  t.is(JSON.parse(answered.stdout).purchase.status, 'APPROVED');
  const again = await cli(['answer', created.body.purchaseRequest.id, 'reject', '--person', 'ana']);
  t.is(again.code, 1);
  t.regex(again.stderr, /approval_not_pending/);
  const disabled = await cli(['agent-status', result.agents.buyer.id, 'disabled']);
  t.is(disabled.code, 0);
  t.is(JSON.parse(disabled.stdout).agent.status, 'DISABLED');
  const revoked = await cli(['revoke-key', result.apiKeys['buyer-key'].id]);
  t.is(revoked.code, 0);
  t.is((await app.request('/v1/purchase-requests', { key: buyerKey, body: { merchant: 'x', amountMinor: 1, reason: 'y' } })).body.error.code, 'api_key_revoked');
});

test('usage errors and a missing token exit with status 2 and say why', async (t) => {
  const usage = await cli(['frobnicate']);
  t.is(usage.code, 2);
  t.regex(usage.stderr, /Usage: npm run admin/);
  const noToken = await cli(['revoke-key', 'x'], { ADMIN_TOKEN: '' });
  t.is(noToken.code, 2);
  t.regex(noToken.stderr, /ADMIN_TOKEN is not set/);
  const wrongToken = await cli(['revoke-key', '0190aaaa-0000-7000-8000-000000000000'], { ADMIN_TOKEN: 'x'.repeat(30) });
  t.is(wrongToken.code, 1);
  t.regex(wrongToken.stderr, /unauthorized/);
});
