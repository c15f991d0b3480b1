// The operator CLI (scripts/admin.ts) against a running service, as a person would use it.
import test from 'ava';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_TOKEN, startApp, type TestApp } from '../helpers/app.ts';
import { Client, dashboardPurchase, setUpDashboardOrg } from '../helpers/dashboard.ts';
import { quorumManifest } from '../helpers/quorum.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { manifest, V1_MERCHANTS, V1_RULES, V2_MERCHANTS, V2_RULES } from '../helpers/replay.ts';

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

test('apply sends the manifest\'s bytes as they are: one that is not UTF-8 is refused, not stored with characters replaced', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'admin-cli-latin1-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'latin1.yaml');
  // "Café" in Latin-1: the é is the byte 0xE9, which is no UTF-8.
  writeFileSync(file, Buffer.concat([Buffer.from('organization: {handle: latin1, name: "Caf'), Buffer.from([0xe9]), Buffer.from('", currency: EUR, timezone: UTC}\n')]));
  const applied = await cli(['apply', file]);
  t.is(applied.code, 1, applied.stdout);
  t.regex(applied.stderr, /malformed_json/);
  t.is(await app.deps.collections.organizations.findOne({ handle: 'latin1' }), null);
});

test('apply twice prints the keys once; a name with a control character is refused at its path and nothing is written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'admin-cli-twice-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'twice.yaml');
  const yaml = (agentName: string) =>
    `organization: {handle: cli-twice, name: Twice, currency: EUR, timezone: UTC}\nagents: [{handle: buyer, name: ${agentName}}]\napiKeys: [{handle: buyer-key, agent: buyer}]\n`;
  writeFileSync(file, yaml('Buyer'));
  const first = await cli(['apply', file]);
  t.is(first.code, 0, first.stderr);
  const key = JSON.parse(first.stdout).apiKeys['buyer-key'].key;
  t.regex(key, /^cmp_live_/);
  const second = await cli(['apply', file]);
  t.is(second.code, 0, second.stderr);
  t.false(second.stdout.includes(key), 'the secret is printed once');
  t.is(JSON.parse(second.stdout).apiKeys['buyer-key'].key, undefined);

  writeFileSync(file, yaml('"Buyer\\r\\nForged: line"'));
  const refused = await cli(['apply', file]);
  t.is(refused.code, 1, refused.stdout);
  t.regex(refused.stderr, /agents\.0\.name/);
  t.regex(refused.stderr, /CONTROL_CHARACTER/);
  t.is((await app.deps.collections.agents.findOne({ handle: 'buyer', organizationId: JSON.parse(first.stdout).organization.id }))!.name, 'Buyer');
});

test('apply refuses a manifest that would activate a version validate calls invalid, at the issue\'s path; as a draft it applies', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'admin-cli-activate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'activate.yaml');
  const yaml = (activate: boolean) =>
    'organization: {handle: cli-activate, name: Activate, currency: EUR, timezone: UTC}\n' +
    'policies:\n' +
    `  - {handle: office, name: Office, scope: ORGANIZATION, currencies: [EUR], activate: ${activate},\n` +
    '     rules: [{ruleType: SPEND_LIMIT, effect: BLOCK, periodKind: DAY, amountMinor: "1000", currency: USD}]}\n';
  writeFileSync(file, yaml(true));
  const refused = await cli(['apply', file]);
  t.is(refused.code, 1, refused.stdout);
  t.regex(refused.stderr, /RULE_CURRENCY_NOT_COVERED/);
  t.regex(refused.stderr, /policies\.0\.rules\.0\.currency/);
  t.is(await app.deps.collections.organizations.findOne({ handle: 'cli-activate' }), null, 'nothing written');

  writeFileSync(file, yaml(false));
  const drafted = await cli(['apply', file]);
  t.is(drafted.code, 0, drafted.stderr);
  const office = JSON.parse(drafted.stdout).policies.office;
  t.is(office.activeVersionId, null);
  t.truthy(office.draftVersionId);
});

test('answer refuses to approve a purchase in the name of the person who made it on the dashboard; it stays pending', async (t) => {
  // The dashboard's same-origin check compares with BASE_URL: this app's own address.
  app.deps.config.baseUrl = app.url;
  const org = await setUpDashboardOrg(app, 'selfie', [
    { handle: 'ana', name: 'Ana Admin', email: 'ana@selfie.example', roles: ['approver'] },
    { handle: 'bo', name: 'Bo Approver', email: 'bo@selfie.example', roles: ['approver'] },
  ]);
  const ana = new Client(app.url);
  await ana.signIn(org.people.ana.email);
  const id = await dashboardPurchase(ana, org.agents.buyer.id, { merchant: 'Standing Desks Ltd', amount: '300.00' });
  const refused = await cli(['answer', id, 'approve', '--person', 'ana']);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /self_approval_not_permitted/);
  t.is((await app.request(`/v1/purchase-requests/${id}`, { key: org.keys['buyer-key'] })).body.purchase.status, 'PENDING_APPROVAL');
  const approved = await cli(['answer', id, 'approve', '--person', 'bo']);
  t.is(approved.code, 0, approved.stderr);
  t.is(JSON.parse(approved.stdout).purchase.status, 'APPROVED');
});

test('usage errors and a missing token exit with status 2 and say why', async (t) => {
  const usage = await cli(['frobnicate']);
  t.is(usage.code, 2);
  t.regex(usage.stderr, /^unknown command "frobnicate"\n\nUsage: npm run admin/);
  const noToken = await cli(['revoke-key', 'x'], { ADMIN_TOKEN: '' });
  t.is(noToken.code, 2);
  t.regex(noToken.stderr, /ADMIN_TOKEN is not set/);
  const wrongToken = await cli(['revoke-key', '0190aaaa-0000-7000-8000-000000000000'], { ADMIN_TOKEN: 'x'.repeat(30) });
  t.is(wrongToken.code, 1);
  t.regex(wrongToken.stderr, /unauthorized/);
  // A mistyped option, or one a command does not take, is a usage mistake too: no stack trace.
  for (const [args, why] of [
    [['answer', 'x', 'approve', '--persn', 'ana'], /'--persn'/],
    [['mongo-url', '--analist'], /'--analist'/],
    [['apply', 'no-such-manifest.yaml'], /cannot read no-such-manifest\.yaml/],
    [['answer', 'x', 'maybe', '--person', 'ana'], /^answer: missing or wrong arguments/],
    [['backup'], /^backup: name one file to write/],
    [['verify-log'], /^verify-log: missing or wrong arguments/],
    [['rotate-signing-key', '--from', '3'], /^rotate-signing-key: missing or wrong arguments/],
  ] as const) {
    const mistake = await cli([...args]);
    t.is(mistake.code, 2, args.join(' '));
    t.regex(mistake.stderr, why, 'says what was wrong');
    t.regex(mistake.stderr, /Usage: npm run admin/);
    t.notRegex(mistake.stderr, /\n\s+at /, 'no stack trace');
  }
});

test('every command that takes an id, given one that is not: not found, whatever characters it holds', async (t) => {
  // Not a path: an id with slashes, dots or a question mark must not reach another call (here, the manifests route).
  const id = 'x/../../manifests?';
  for (const args of [
    ['answer', id, 'approve', '--person', 'ana'],
    ['purchase', id],
    ['agent-status', id, 'disabled'],
    ['org-status', id, 'suspended'],
    ['shadow', id, 'on'],
    ['revoke-key', id],
    ['revoke-connection', id],
  ]) {
    const res = await cli(args);
    t.is(res.code, 1, args.join(' '));
    t.is(JSON.parse(res.stderr).error.code, 'not_found', res.stderr);
  }
});

test('help is asked for with help, --help or -h: the usage on standard output, status 0', async (t) => {
  for (const arg of ['help', '--help', '-h']) {
    const help = await cli([arg]);
    t.is(help.code, 0, arg);
    t.regex(help.stdout, /Usage: npm run admin/);
  }
});

test('a service that cannot be reached is one line naming SERVICE_URL, status 1', async (t) => {
  // A port nothing listens on: one just freed.
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const unreachable = await cli(['oauth-clients'], { SERVICE_URL: `http://127.0.0.1:${port}` });
  t.is(unreachable.code, 1);
  t.regex(unreachable.stderr, new RegExp(`^cannot reach the service at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\): set SERVICE_URL`));
  t.is(unreachable.stderr.trim().split('\n').length, 1);
});

test('a two-person rule through the CLI: the first answer is recorded and shown, the same person is refused, the second decides', async (t) => {
  const applied = await app.admin('/admin/manifests', { body: quorumManifest('cli-quorum') });
  t.is(applied.status, 200);
  const submit = async (key: string) => (await app.request('/v1/purchase-requests', { key, body: { merchant: 'Paper Co', amountMinor: '30000', reason: 'two keys' } })).body.purchaseRequest.id as string;
  const id = await submit(applied.body.apiKeys['buyer-key'].key);

  const first = await cli(['answer', id, 'approve', '--person', 'ana', '--comment', 'one of two']);
  t.is(first.code, 0, first.stderr);
  t.is(JSON.parse(first.stdout).purchase.status, 'PENDING_APPROVAL');
  t.deepEqual(Object.keys(JSON.parse(first.stdout)), ['purchase'], 'recorded below the quorum: no decision, so no receipt');
  const shown = await cli(['purchase', id]);
  t.is(shown.code, 0, shown.stderr);
  const approval = JSON.parse(shown.stdout).purchase.approval;
  t.like(approval, { state: 'PENDING', approvalsRequired: 2 });
  t.deepEqual(approval.answers.map((a: any) => [a.name, a.answer, a.comment]), [['Ana Approver', 'APPROVE', 'one of two']]);
  t.regex(approval.answers[0].answeredAt, /^\d{4}-/);

  const same = await cli(['answer', id, 'approve', '--person', 'ana']);
  t.is(same.code, 1);
  t.regex(same.stderr, /approval_already_answered_by_person/);
  const second = await cli(['answer', id, 'approve', '--person', 'bob']);
  t.is(second.code, 0, second.stderr);
  const printed = JSON.parse(second.stdout);
  const done = printed.purchase;
  t.is(done.status, 'APPROVED');
  const receipts = (await app.request(`/v1/purchase-requests/${id}/receipts`, { key: applied.body.apiKeys['buyer-key'].key })).body.receipts;
  t.is(printed.receipt, receipts.at(-1).receipt, 'the decision\'s receipt, printed in the same JSON');
  t.like(JSON.parse(Buffer.from(printed.receipt.split('.')[1], 'base64url').toString('utf8')), { kind: 'APPROVAL_REEVALUATION', decisionId: done.decision.id });
  t.is(done.decision.kind, 'APPROVAL_REEVALUATION');
  t.deepEqual(done.approval.resolvedBy, { name: 'Bob Approver' });
  const third = await cli(['answer', id, 'approve', '--person', 'cyd']);
  t.is(third.code, 1);
  t.regex(third.stderr, /approval_not_pending/);

  const other = await submit(applied.body.apiKeys['buyer-key'].key);
  t.is((await cli(['answer', other, 'approve', '--person', 'ana'])).code, 0);
  const rejected = await cli(['answer', other, 'reject', '--person', 'cyd']);
  t.is(JSON.parse(rejected.stdout).purchase.status, 'REJECTED');
  t.regex(JSON.parse(rejected.stdout).receipt, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a rejection that decides prints its receipt too');

  const solo = await submit(applied.body.apiKeys['solo-key'].key);
  t.is(JSON.parse((await cli(['answer', solo, 'approve', '--person', 'ana'])).stdout).purchase.status, 'APPROVED', 'a single-approver rule resolves on one approval');
  t.is((await cli(['purchase', '0190aaaa-0000-7000-8000-000000000000'])).code, 1);
});

test('shadow puts a draft in shadow and takes it out; a version that is not a draft, or no on/off, is refused', async (t) => {
  const org = await applyManifest(app, manifest('cli-shadow', [{ rules: V1_RULES, merchants: V1_MERCHANTS, activate: true }]));
  const draftId = (await applyManifest(app, manifest('cli-shadow', [{ rules: V2_RULES, merchants: V2_MERCHANTS, activate: false }]))).policies.office.draftVersionId!;
  const on = await cli(['shadow', draftId, 'on']);
  t.is(on.code, 0, on.stderr);
  t.like(JSON.parse(on.stdout).shadow, { policyVersionId: draftId, shadow: true, stoppedAt: null });
  const report = await app.request(`/v1/policies/${org.policies.office.id}/versions/${draftId}/shadow`, { key: org.keys['org-key'] });
  t.like(report.body.shadow, { shadow: true, pending: 0 });
  const off = await cli(['shadow', draftId, 'OFF']);
  t.is(off.code, 0, off.stderr);
  t.like(JSON.parse(off.stdout).shadow, { shadow: false, stopReason: 'STOPPED' });
  const active = await cli(['shadow', org.policies.office.activeVersionId!, 'on']);
  t.is(active.code, 1);
  t.regex(active.stderr, /version_not_draft/);
  const usage = await cli(['shadow', draftId, 'maybe']);
  t.is(usage.code, 2);
  t.regex(usage.stderr, /Usage: npm run admin/);
});
