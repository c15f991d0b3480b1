// The dashboard through plain HTTP, for what a browser test would only show slowly or not at all:
// cookie attributes, session expiry, sign-in throttling, CSRF and Origin refusals, roles, tenant
// isolation, the answer command's refusals, filters and keyset pages, admins' pages, policies.
import test from 'ava';
import type { TestApp } from '../helpers/app.ts';
import { Client, PASSWORD, dashboardManifest, dashboardPurchase, field, setUpDashboardOrg, startDashboardApp, type DashboardOrg } from '../helpers/dashboard.ts';
import { clock, connect, oauthSignIn, openDashboardSignIn, startMetadataServer, tally, type Clock } from '../oauth/helpers.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { dayOf, periodOfPurchase } from '../helpers/windows.ts';
import { refoldOnce } from '../../src/store/text-search.ts';

const ANA = { handle: 'ana', name: 'Ana Admin', email: 'ana@acme.example', roles: ['approver', 'admin'] };
const VIC = { handle: 'vic', name: 'Vic Viewer', email: 'vic@acme.example', roles: ['viewer'] };
const PAM = { handle: 'pam', name: 'Pam Plain', email: 'pam@acme.example' }; // no roles: the default

async function setUp(t: { teardown(fn: () => Promise<void>): void }, options: { clock?: Clock; env?: Record<string, string> } = {}) {
  // TRUST_PROXY=1, as the Procfile sets it: the throttle tests play the proxy, sending from many addresses.
  const app = await startDashboardApp({ now: options.clock?.now, env: { TRUST_PROXY: '1', ...options.env } });
  t.teardown(() => app.close());
  const acme = await setUpDashboardOrg(app, 'acme', [ANA, VIC, PAM]);
  return { app, acme };
}

async function pending(app: TestApp, org: DashboardOrg, merchant = 'Standing Desks Ltd') {
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant, amountMinor: '30000', reason: 'A desk' } });
  if (res.body?.decision?.outcome !== 'REQUIRES_APPROVAL') throw new Error(res.text);
  return res.body.purchaseRequest.id as string;
}

const state = async (app: TestApp, org: DashboardOrg, id: string) => (await app.request(`/v1/purchase-requests/${id}`, { key: org.keys['buyer-key'] })).body.purchase;

test('sign-in: a session cookie that is HttpOnly and SameSite=Lax; Secure with the __Host- prefix when BASE_URL is https', async (t) => {
  const { app, acme } = await setUp(t);
  const client = new Client(app.url);
  const signedIn = await client.signIn(acme.people.ana.email);
  t.is(signedIn.status, 303);
  t.is(signedIn.location, '/dashboard');
  const cookie = signedIn.headers.getSetCookie().find((c) => c.startsWith('cmp_dashboard='))!;
  t.regex(cookie, /^cmp_dashboard=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200$/);
  t.notRegex(cookie, /Secure/);
  // The store keeps a digest of the cookie, not the cookie.
  const value = cookie.split(';')[0].split('=')[1];
  const sessions = app.store.db.collection<{ _id: string }>('dashboard_sessions');
  t.is(await sessions.countDocuments({ _id: value }), 0);
  t.is(await sessions.countDocuments({}), 1);

  app.deps.config.baseUrl = 'https://spend.example';
  const secure = new Client(app.url);
  const form = await secure.get('/dashboard/sign-in');
  t.regex(form.headers.getSetCookie()[0], /^__Host-cmp_dashboard_signin=.*; Secure$/);
  const https = await secure.post('/dashboard/sign-in', { token: field(form.text, 'token'), email: acme.people.ana.email, password: PASSWORD }, { origin: 'https://spend.example' });
  t.is(https.status, 303);
  t.regex(https.headers.getSetCookie().find((c) => c.startsWith('__Host-cmp_dashboard='))!, /; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200; Secure$/);
});

test('sign-in refusals: a wrong password and an unknown email read the same; a form from elsewhere is refused', async (t) => {
  const { app, acme } = await setUp(t);
  const wrong = await new Client(app.url).signIn(acme.people.ana.email, 'not the password at all');
  const unknown = await new Client(app.url).signIn('nobody@acme.example');
  t.is(wrong.status, 401);
  t.is(unknown.status, 401);
  t.regex(wrong.text, /That email and password do not match/);
  t.is(wrong.text.replace(/value="[^"]*"/g, ''), unknown.text.replace(/value="[^"]*"/g, ''));
  // No sign-in cookie: the form did not come from this browser's sign-in page (login CSRF).
  const foreign = await new Client(app.url).post('/dashboard/sign-in', { token: 'x'.repeat(43), email: acme.people.ana.email, password: PASSWORD });
  t.is(foreign.status, 403);
  t.is(foreign.headers.getSetCookie().filter((c) => c.startsWith('cmp_dashboard=')).length, 0);
});

test('signed out: pages send you to sign in, and a change is refused without doing anything', async (t) => {
  const { app, acme } = await setUp(t);
  const id = await pending(app, acme);
  const client = new Client(app.url);
  for (const path of ['/dashboard', '/dashboard/purchases', '/dashboard/budgets', '/dashboard/policies', '/dashboard/keys', `/dashboard/purchases/${id}`]) {
    const res = await client.get(path);
    t.is(res.status, 303, path);
    t.is(res.location, path === '/dashboard' ? '/dashboard/sign-in' : `/dashboard/sign-in?next=${encodeURIComponent(path)}`, path);
  }
  const unknown = await client.get('/dashboard/no/such/page');
  t.is(unknown.status, 404);
  t.regex(unknown.headers.get('content-type')!, /^text\/html/);
  const post = await client.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf: 'x' });
  t.is(post.status, 403);
  t.regex(post.text, /signed out/);
  t.is((await state(app, acme, id)).status, 'PENDING_APPROVAL');
});

test('sessions end after 30 idle minutes, and after 12 hours however active', async (t) => {
  const c = clock();
  const { app, acme } = await setUp(t, { clock: c });
  const idle = new Client(app.url);
  await idle.signIn(acme.people.ana.email);
  c.advance(29 * 60 * 1000);
  t.is((await idle.get('/dashboard')).status, 200);
  c.advance(29 * 60 * 1000);
  t.is((await idle.get('/dashboard')).status, 200, 'activity slides the idle timeout');
  c.advance(31 * 60 * 1000);
  t.is((await idle.get('/dashboard')).location, '/dashboard/sign-in');

  const busy = new Client(app.url);
  await busy.signIn(acme.people.ana.email);
  for (let elapsed = 0; elapsed < 11.5 * 60; elapsed += 20) {
    c.advance(20 * 60 * 1000);
    t.is((await busy.get('/dashboard/budgets')).status, 200);
  }
  c.advance(40 * 60 * 1000);
  t.is((await busy.get('/dashboard/budgets')).location, '/dashboard/sign-in?next=%2Fdashboard%2Fbudgets');
});

test('failed sign-ins are throttled per account and per address, for 15 minutes', async (t) => {
  const c = clock();
  const { app, acme } = await setUp(t, { clock: c });
  const from = (address: string) => {
    const client = new Client(app.url);
    return {
      async signIn(email: string, password = PASSWORD) {
        const page = await client.get('/dashboard/sign-in');
        return client.post('/dashboard/sign-in', { token: field(page.text, 'token'), email, password }, { origin: app.url, 'x-forwarded-for': address });
      },
    };
  };
  // Per account: five failures from different addresses lock the account, even for the right password.
  for (let i = 0; i < 5; i++) t.is((await from(`198.51.100.${i}`).signIn(acme.people.vic.email, 'wrong password')).status, 401);
  const locked = await from('198.51.100.99').signIn(acme.people.vic.email);
  t.is(locked.status, 429);
  t.regex(locked.text, /Too many failed sign-ins\. Try again in 1[45] minutes\./, '15 minutes from the first failure: 14 on a machine that took over a minute for the password checks before');
  t.is((await from('198.51.100.99').signIn(acme.people.ana.email)).status, 303, 'other accounts are not affected');

  // Per address: twenty failures over many accounts block that address, for every account.
  for (let i = 0; i < 20; i++) t.is((await from('203.0.113.7').signIn(`guess${i}@acme.example`, 'wrong password')).status, 401);
  t.is((await from('203.0.113.7').signIn(acme.people.ana.email)).status, 429);
  t.is((await from('203.0.113.8').signIn(acme.people.ana.email)).status, 303);

  c.advance(15 * 60 * 1000 + 1000);
  t.is((await from('203.0.113.7').signIn(acme.people.vic.email)).status, 303, 'the windows end');
});

test('wrong passwords sent all at once are checked at most 5 times; then the right one is refused here and on the OAuth sign-in page', async (t) => {
  const { app, acme } = await setUp(t, { env: { WEBHOOK_UNSAFE_ALLOW_LOCAL: '1' } });
  const metadata = await startMetadataServer();
  t.teardown(() => metadata.close());
  const vic = acme.people.vic.email;
  // Fifteen forms, each in its own browser, posted together from fifteen addresses.
  const forms = await Promise.all(Array.from({ length: 15 }, () => openDashboardSignIn(app)));
  const answers = await Promise.all(forms.map((form, i) => form.submit(vic, `wrong password ${i}`, `198.51.100.${i}`)));
  t.deepEqual(tally(answers), { 401: 5, 429: 10 });
  // The account is locked, even for its password, on both sign-in pages.
  t.is((await (await openDashboardSignIn(app)).submit(vic, PASSWORD, '198.51.100.99')).status, 429);
  const oauth = await oauthSignIn(app, metadata.clientId, vic, PASSWORD, '198.51.100.99');
  t.is(oauth.status, 429);
  t.regex(oauth.text, /Too many failed sign-ins\. Try again in 1[45] minutes\./, '15 minutes from the first failure: 14 on a machine that took over a minute for the password checks before');
});

test('every change needs the session\'s CSRF token and a same-origin request', async (t) => {
  const { app, acme } = await setUp(t);
  const id = await pending(app, acme);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  const csrf = await client.csrf();

  const missing = await client.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE' });
  t.is(missing.status, 403);
  t.regex(missing.text, /did not come from the dashboard/);
  const forged = await client.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf: csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A') });
  t.is(forged.status, 403);
  const otherSite = await client.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf }, { origin: 'https://evil.example' });
  t.is(otherSite.status, 403);
  t.regex(otherSite.text, /came from another site/);
  const noOrigin = await client.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf }, { 'sec-fetch-site': 'cross-site' });
  t.is(noOrigin.status, 403);
  const signOut = await client.post('/dashboard/sign-out', {}, { origin: 'https://evil.example' });
  t.is(signOut.status, 403, 'nobody can sign you out from another site either');
  t.is((await state(app, acme, id)).status, 'PENDING_APPROVAL');

  const ok = await client.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf });
  t.is(ok.status, 303);
  t.is((await state(app, acme, id)).status, 'APPROVED');
});

test('a pending purchase is answered on its own page, where the approvers\' email leads; a viewer sees no form there', async (t) => {
  const { app, acme } = await setUp(t);
  const id = await pending(app, acme);
  const vic = new Client(app.url);
  await vic.signIn(acme.people.vic.email);
  const seen = await vic.get(`/dashboard/purchases/${id}`);
  t.is(seen.status, 200);
  t.false(seen.text.includes(`action="/dashboard/approvals/${id}/answer"`));

  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  const page = await ana.get(`/dashboard/purchases/${id}`);
  t.is(page.status, 200);
  t.true(page.text.includes(`action="/dashboard/approvals/${id}/answer"`));
  t.true(page.text.includes('value="APPROVE"'));
  const ok = await ana.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf: field(page.text, 'csrf') });
  t.is(ok.status, 303);
  t.is((await state(app, acme, id)).status, 'APPROVED');
  // Answered: the page shows the approval, and no form.
  t.false((await ana.get(`/dashboard/purchases/${id}`)).text.includes(`action="/dashboard/approvals/${id}/answer"`));
});

test('a second answer and an answer after expiry get the operator API\'s refusal', async (t) => {
  const c = clock();
  const { app, acme } = await setUp(t, { clock: c });
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  const csrf = await client.csrf();
  const answered = await pending(app, acme);
  t.is((await client.post(`/dashboard/approvals/${answered}/answer`, { answer: 'REJECT', comment: 'No', csrf })).status, 303);
  const again = await client.post(`/dashboard/approvals/${answered}/answer`, { answer: 'APPROVE', csrf });
  const operator = await app.admin(`/admin/purchase-requests/${answered}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(again.status, 409);
  t.true(again.text.includes(operator.body.error.message));

  const late = await pending(app, acme, 'Late Answers Ltd');
  c.advance(24 * 60 * 60 * 1000 + 1000);
  const fresh = new Client(app.url); // a day later the old session has ended too
  await fresh.signIn(acme.people.ana.email);
  const afterExpiry = await fresh.post(`/dashboard/approvals/${late}/answer`, { answer: 'APPROVE', csrf: await fresh.csrf() });
  const operatorLate = await app.admin(`/admin/purchase-requests/${late}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(afterExpiry.status, 409);
  t.is(operatorLate.status, 409);
  t.true(afterExpiry.text.includes(operatorLate.body.error.message));
});

test('roles: viewers look, approvers answer and buy, admins see connections and keys; the default role is approver', async (t) => {
  const { app, acme } = await setUp(t);
  const id = await pending(app, acme);
  const vic = new Client(app.url);
  await vic.signIn(acme.people.vic.email);
  const inbox = await vic.get('/dashboard');
  t.true(inbox.text.includes(`data-id="${id}"`));
  t.false(inbox.text.includes('value="APPROVE"'));
  for (const path of ['/dashboard/keys', '/dashboard/connections', '/dashboard/purchases/new']) t.is((await vic.get(path)).status, 403, path);
  t.is((await vic.get('/dashboard/policies')).status, 200);
  t.is((await vic.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf: await vic.csrf() })).status, 403);
  // The operator cannot answer in a viewer's name either: the rule lives in the answer command.
  const operator = await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'vic' } });
  t.is(operator.status, 403);
  t.is(operator.body.error.code, 'person_not_approver');

  const pam = new Client(app.url);
  await pam.signIn(acme.people.pam.email);
  t.is((await pam.get('/dashboard/keys')).status, 403);
  t.is((await pam.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf: await pam.csrf() })).status, 303);
  t.deepEqual((await state(app, acme, id)).approval.resolvedBy, { name: 'Pam Plain' });
});

test('four eyes: whoever made a purchase on the dashboard cannot approve it there or through the operator; another approver can, and they may reject their own', async (t) => {
  const { app, acme } = await setUp(t);
  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  const own = await dashboardPurchase(ana, acme.agents.buyer.id, { merchant: 'Standing Desks Ltd', amount: '300.00' });
  t.is((await state(app, acme, own)).status, 'PENDING_APPROVAL');
  // The inbox does not offer what would be refused: no Approve on her own card, Reject still there.
  const card = (await ana.get('/dashboard')).text.split(`data-id="${own}"`)[1].split('</form>')[0];
  t.false(card.includes('value="APPROVE"'));
  t.true(card.includes('value="REJECT"'));

  const refused = await ana.post(`/dashboard/approvals/${own}/answer`, { answer: 'APPROVE', csrf: await ana.csrf() });
  t.is(refused.status, 403);
  t.true(refused.text.includes('data-code="self_approval_not_permitted"'));
  const operator = await app.admin(`/admin/purchase-requests/${own}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(operator.status, 403);
  t.is(operator.body.error.code, 'self_approval_not_permitted');
  t.true(refused.text.includes(operator.body.error.message));
  const after = await state(app, acme, own);
  t.is(after.status, 'PENDING_APPROVAL');
  t.true(after.approval.isPending);

  const pam = new Client(app.url);
  await pam.signIn(acme.people.pam.email);
  t.true((await pam.get('/dashboard')).text.split(`data-id="${own}"`)[1].split('</form>')[0].includes('value="APPROVE"'));
  t.is((await pam.post(`/dashboard/approvals/${own}/answer`, { answer: 'APPROVE', csrf: await pam.csrf() })).status, 303);
  const approved = await state(app, acme, own);
  t.is(approved.status, 'APPROVED');
  t.deepEqual(approved.approval.resolvedBy, { name: 'Pam Plain' });

  // Withdrawing one's own purchase is allowed.
  const withdrawn = await dashboardPurchase(ana, acme.agents.buyer.id, { merchant: 'Standing Desks Ltd', amount: '310.00' });
  t.is((await ana.post(`/dashboard/approvals/${withdrawn}/answer`, { answer: 'REJECT', comment: 'Changed my mind', csrf: await ana.csrf() })).status, 303);
  t.deepEqual((await state(app, acme, withdrawn)).approval.resolvedBy, { name: 'Ana Admin' });
  t.is((await state(app, acme, withdrawn)).status, 'REJECTED');
});

test('four eyes: a second person record with the maker\'s email cannot approve the purchase either', async (t) => {
  // One human listed twice in the manifest (two handles, one email): the purchase is theirs under both.
  const app = await startDashboardApp();
  t.teardown(() => app.close());
  const twice = { handle: 'ana-finance', name: 'Ana (finance)', email: 'ANA@acme.example', roles: ['approver'] };
  const acme = await setUpDashboardOrg(app, 'acme', [ANA, PAM, twice]);
  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  const own = await dashboardPurchase(ana, acme.agents.buyer.id, { merchant: 'Standing Desks Ltd', amount: '300.00' });
  const refused = await app.admin(`/admin/purchase-requests/${own}/answer`, { body: { answer: 'APPROVE', person: 'ana-finance' } });
  t.is(refused.status, 403, refused.text);
  t.is(refused.body.error.code, 'self_approval_not_permitted');
  t.is((await state(app, acme, own)).status, 'PENDING_APPROVAL');
  t.is((await app.admin(`/admin/purchase-requests/${own}/answer`, { body: { answer: 'APPROVE', person: 'pam' } })).status, 200);
  t.is((await state(app, acme, own)).status, 'APPROVED');
});

test('four eyes through a connection: what an assistant Ana connected buys over MCP is hers; no Approve for her on the dashboard, under either record', async (t) => {
  // Ana authorised the assistant, so its purchase counts as made by her (docs/reference/decisions.md),
  // though the readback keeps initiatedBy null as for every machine origin.
  const { app } = await setUp(t, { env: { WEBHOOK_UNSAFE_ALLOW_LOCAL: '1' } });
  const twice = { handle: 'ana-finance', name: 'Ana (finance)', email: 'ANA@acme.example', roles: ['approver'] };
  const acme = await setUpDashboardOrg(app, 'acme-mcp', [{ ...ANA, email: 'ana@acme-mcp.example' }, { ...PAM, email: 'pam@acme-mcp.example' }, { ...twice, email: 'ANA@acme-mcp.example' }]);
  const metadata = await startMetadataServer('Claude Desktop');
  t.teardown(() => metadata.close());
  const tokens = await connect(app, { ...acme, personId: acme.people.ana.id, email: acme.people.ana.email }, metadata.clientId);
  const mcp = new McpClient({ name: 'dashboard-test', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${tokens.access_token}` } } }));
  t.teardown(() => mcp.close());
  const asked = (await mcp.callTool({ name: 'request_purchase', arguments: { merchant: 'Standing Desks Ltd', amountMinor: '30000', reason: 'A desk' } })).structuredContent as any;
  t.is(asked.decision.outcome, 'REQUIRES_APPROVAL', JSON.stringify(asked));
  const id = asked.purchaseRequest.id as string;

  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  const card = (html: string) => html.split(`data-id="${id}"`)[1].split('</form>')[0];
  for (const page of ['/dashboard', `/dashboard/purchases/${id}`]) {
    const own = card((await ana.get(page)).text);
    t.false(own.includes('value="APPROVE"'), page);
    t.true(own.includes('value="REJECT"'), page);
  }
  const refused = await ana.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf: await ana.csrf() });
  t.is(refused.status, 403);
  t.true(refused.text.includes('data-code="self_approval_not_permitted"'));
  for (const person of ['ana', 'ana-finance']) {
    const operator = await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person } });
    t.is(operator.status, 403, person);
    t.is(operator.body.error.code, 'self_approval_not_permitted', person);
  }
  const read = async () => ((await mcp.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: id } })).structuredContent as any).purchase;
  const waiting = await read();
  t.is(waiting.status, 'PENDING_APPROVAL');
  t.is(waiting.initiatedBy, null, 'the readback is as the contract has it');

  const pam = new Client(app.url);
  await pam.signIn(acme.people.pam.email);
  t.true(card((await pam.get('/dashboard')).text).includes('value="APPROVE"'));
  t.is((await pam.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf: await pam.csrf() })).status, 303);
  const approved = await read();
  t.is(approved.status, 'APPROVED');
  t.deepEqual(approved.approval.resolvedBy, { name: 'Pam Plain' });
});

test('one human under two handles (one email) is one person on the inbox too: no Approve on what either made or answered', async (t) => {
  // Signed in as the second record (its own password), the inbox offers what the answer command allows.
  const app = await startDashboardApp();
  t.teardown(() => app.close());
  const twice = { handle: 'ana-finance', name: 'Ana (finance)', email: 'ANA@acme.example', roles: ['approver'] };
  const acme = await setUpDashboardOrg(app, 'acme', [ANA, PAM, twice], undefined, (m) => {
    (m.policies[0].rules[1] as Record<string, unknown>).approvalsRequired = 2;
  });
  const other = 'another passphrase for the finance record';
  t.is((await app.admin(`/admin/people/${acme.people['ana-finance'].id}/password`, { method: 'PUT', body: { password: other } })).status, 200);
  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  const own = await dashboardPurchase(ana, acme.agents.buyer.id, { merchant: 'Standing Desks Ltd', amount: '300.00' });
  const answered = await pending(app, acme, 'Answered Chairs Ltd');
  t.is((await app.admin(`/admin/purchase-requests/${answered}/answer`, { body: { answer: 'APPROVE', person: 'ana' } })).status, 200);

  const finance = new Client(app.url);
  t.is((await finance.signIn(acme.people.ana.email, other)).status, 303);
  const inbox = (await finance.get('/dashboard')).text;
  const card = (id: string) => inbox.split(`data-id="${id}"`)[1].split('<li class="card"')[0];
  t.false(card(own).includes('value="APPROVE"'), 'her own purchase, made under the other handle');
  t.true(card(own).includes('value="REJECT"'));
  t.false(card(answered).includes('<form'), 'answered under the other handle: nothing more to do');
  t.regex(card(answered), /You approved it/);
  // What the inbox would have offered is what the command refuses.
  const refused = await finance.post(`/dashboard/approvals/${own}/answer`, { answer: 'APPROVE', csrf: await finance.csrf() });
  t.is(refused.status, 403);
  t.is((await finance.post(`/dashboard/approvals/${answered}/answer`, { answer: 'APPROVE', csrf: await finance.csrf() })).status, 409);
});

test('another organisation\'s purchases, keys and approvals are indistinguishable from ones that do not exist', async (t) => {
  const { app, acme } = await setUp(t);
  const globex = await setUpDashboardOrg(app, 'globex', [{ handle: 'ana', name: 'Ana of Globex', email: 'ana@globex.example', roles: ['approver', 'admin'] }]);
  const id = await pending(app, acme);
  const client = new Client(app.url);
  await client.signIn(globex.people.ana.email);
  const csrf = await client.csrf();
  const missing = '0197a000-0000-7000-8000-000000000000';
  const pairs: [string, string][] = [
    [`/dashboard/purchases/${id}`, `/dashboard/purchases/${missing}`],
  ];
  for (const [theirs, none] of pairs) {
    const a = await client.get(theirs);
    const b = await client.get(none);
    t.is(a.status, 404);
    t.is(a.text, b.text);
  }
  // The same person handle exists in both organisations: the answer must still not reach acme's purchase.
  const answer = await client.post(`/dashboard/approvals/${id}/answer`, { answer: 'APPROVE', csrf });
  const answerNone = await client.post(`/dashboard/approvals/${missing}/answer`, { answer: 'APPROVE', csrf });
  t.is(answer.status, 404);
  t.is(answer.text, answerNone.text);
  const key = await client.post(`/dashboard/keys/${acme.keyIds['buyer-key']}/revoke`, { csrf });
  t.is(key.status, 404);
  t.is((await app.request('/v1/agents', { key: acme.keys['admin-key'] })).status, 200);
  t.is((await state(app, acme, id)).status, 'PENDING_APPROVAL');
  t.false((await client.get('/dashboard/purchases')).text.includes('Standing Desks'));
});

test('another organisation\'s assistant connection cannot be revoked from the dashboard: the refusal reads as for one that does not exist', async (t) => {
  const { app, acme } = await setUp(t, { env: { WEBHOOK_UNSAFE_ALLOW_LOCAL: '1' } });
  const globex = await setUpDashboardOrg(app, 'globex', [{ handle: 'ana', name: 'Ana of Globex', email: 'ana@globex.example', roles: ['approver', 'admin'] }]);
  const metadata = await startMetadataServer('Claude Desktop');
  t.teardown(() => metadata.close());
  const tokens = await connect(app, { ...acme, personId: acme.people.ana.id, email: acme.people.ana.email }, metadata.clientId);
  const connections = app.store.db.collection<{ _id: string; organizationId: string }>('connections');
  const before = await connections.findOne({ _id: tokens.connectionId });
  t.is(before?.organizationId, acme.organizationId);

  const client = new Client(app.url);
  await client.signIn(globex.people.ana.email);
  const csrf = await client.csrf();
  const theirs = await client.post(`/dashboard/connections/${tokens.connectionId}/revoke`, { csrf });
  const none = await client.post('/dashboard/connections/0197a000-0000-7000-8000-000000000000/revoke', { csrf });
  t.is(theirs.status, 404);
  t.is(theirs.text, none.text);
  t.false((await client.get('/dashboard/connections')).text.includes('Claude Desktop'));

  // Acme's connection is as it was: stored unchanged, its token still works, and Acme's page shows it unrevoked.
  t.deepEqual(await connections.findOne({ _id: tokens.connectionId }), before);
  t.is((await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body: { merchant: 'X', amountMinor: '1', reason: 'r' } })).status, 200);
  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  const page = (await ana.get('/dashboard/connections')).text;
  t.regex(page, /Claude Desktop/);
  t.notRegex(page, /revoked \d/);
});

test('another organisation\'s policy draft cannot be put in shadow or stopped from the dashboard: the refusal reads as for one that does not exist', async (t) => {
  const { app, acme } = await setUp(t);
  const globex = await setUpDashboardOrg(app, 'globex', [{ handle: 'ana', name: 'Ana of Globex', email: 'ana@globex.example', roles: ['approver', 'admin'] }]);
  const manifest = dashboardManifest('acme', [ANA, VIC, PAM]);
  const office = manifest.policies[0];
  const draft = { ...office, activate: false, rules: office.rules.map((r) => (r.effect === 'REQUIRE_APPROVAL' ? { ...r, amountMinor: '10000' } : r)) };
  const draftId = (await applyManifest(app, { ...manifest, policies: [draft, manifest.policies[1]] })).policies.office.draftVersionId!;
  const policyId = acme.policies.office.id;
  const shadowOf = async () => (await app.request(`/v1/policies/${policyId}/versions/${draftId}/shadow`, { key: acme.keys['admin-key'] })).body.shadow.shadow as boolean;
  const stored = () => app.store.db.collection<{ _id: string }>('policy_shadows').findOne({ _id: draftId });

  const client = new Client(app.url);
  await client.signIn(globex.people.ana.email);
  const csrf = await client.csrf();
  const missing = '0197a000-0000-7000-8000-000000000000';
  // Acme's policy and draft; Globex's own policy with Acme's draft; Acme's policy with a draft that does not exist.
  const attempts = [[policyId, draftId], [globex.policies.office.id, draftId], [policyId, missing]];
  const refusedAll = async (shadow: 'on' | 'off') => {
    const none = await client.post(`/dashboard/policies/${missing}/versions/${missing}/shadow`, { csrf, shadow });
    t.is(none.status, 404);
    for (const [p, v] of attempts) {
      const res = await client.post(`/dashboard/policies/${p}/versions/${v}/shadow`, { csrf, shadow });
      t.is(res.status, 404, `${shadow} ${p} ${v}`);
      t.is(res.text, none.text, `${shadow} ${p} ${v}`);
    }
  };

  // Not in shadow: Globex cannot start it.
  await refusedAll('on');
  t.false(await shadowOf());
  t.is(await stored(), null);

  // In shadow, started by Acme's admin: Globex cannot stop it.
  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  t.is((await ana.post(`/dashboard/policies/${policyId}/versions/${draftId}/shadow`, { csrf: await ana.csrf(), shadow: 'on' })).status, 303);
  const running = await stored();
  await refusedAll('off');
  t.true(await shadowOf());
  t.deepEqual(await stored(), running);
  t.regex((await ana.get('/dashboard/policies')).text, /Stop the shadow/);
});

test('purchases: the merchant filter keeps 200 characters, never half of one', async (t) => {
  const { app, acme } = await setUp(t);
  const merchant = 'x'.repeat(199) + '😀'; // 200 characters (a valid merchant), 201 UTF-16 units
  t.is((await app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], body: { merchant, amountMinor: '100', reason: 'paper' } })).status, 201);
  const client = new Client(app.url);
  await client.signIn(acme.people.vic.email);
  const listed = (await client.get(`/dashboard/purchases?merchant=${encodeURIComponent(merchant)}`)).text;
  const rows = [...listed.matchAll(/<tr><td>[^<]*<\/td><td><a href="\/dashboard\/purchases\/[0-9a-f-]{36}">([^<]*)<\/a>/g)].map((m) => m[1]);
  t.deepEqual(rows, [merchant], 'found by its whole name');
});

test('purchases: the merchant filter folds case in full: ss finds ß, istanbul finds İstanbul, and a purchase stored before the folded field is found once the start has filled it', async (t) => {
  const { app, acme } = await setUp(t);
  for (const merchant of ['Straße Supplies', 'İstanbul Shop', 'ＡＣＭＥ Paper', 'Café Roma', 'Old Straße Store']) {
    t.is((await app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], body: { merchant, amountMinor: '100', reason: 'paper' } })).status, 201);
  }
  // As the previous release wrote it: no merchantFold. The start's backfill adds it.
  await app.store.db.collection('purchase_views').updateMany({ 'readback.merchant': 'Old Straße Store' }, { $unset: { merchantFold: '' } });
  await app.store.db.collection<{ _id: string }>('migrations').deleteMany({ _id: 'purchase_views.merchantFold' });
  t.is(await refoldOnce(app.store.db, { marker: 'purchase_views.merchantFold', collection: 'purchase_views', field: 'merchantFold', source: 'readback.merchant' }), 1);
  const client = new Client(app.url);
  await client.signIn(acme.people.vic.email);
  const found = async (text: string) => [...(await client.get(`/dashboard/purchases?merchant=${encodeURIComponent(text)}`)).text.matchAll(/<tr><td>[^<]*<\/td><td><a href="\/dashboard\/purchases\/[0-9a-f-]{36}">([^<]*)<\/a>/g)].map((m) => m[1]).sort();
  t.deepEqual(await found('strasse'), ['Old Straße Store', 'Straße Supplies']);
  t.deepEqual(await found('STRASSE SUPPLIES'), ['Straße Supplies']);
  t.deepEqual(await found('istanbul'), ['İstanbul Shop']);
  t.deepEqual(await found('İSTANBUL'), ['İstanbul Shop']);
  t.deepEqual(await found('acme'), ['ＡＣＭＥ Paper']);
  t.deepEqual(await found('café'), ['Café Roma']);
  t.deepEqual(await found('cafe'), [], 'accents count, as in merchant keys');
});

test('purchases: filters by agent, status, decision, merchant and dates in the organisation\'s zone, with keyset pages', async (t) => {
  const { app, acme } = await setUp(t);
  for (let i = 0; i < 27; i++) {
    await app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], body: { merchant: `Paper Shop ${i}`, amountMinor: '100', reason: 'paper' } });
  }
  await app.request('/v1/purchase-requests', { key: acme.keys['buyer-key'], body: { merchant: 'Shady Goods Ltd', amountMinor: '100', reason: 'blocked' } });
  const flight = await app.request('/v1/purchase-requests', { key: acme.keys['travel-key'], body: { merchant: 'Skyline Airways', amountMinor: '5000', reason: 'flight', currency: 'USD' } });
  const client = new Client(app.url);
  await client.signIn(acme.people.vic.email);
  const rows = (html: string) => [...html.matchAll(/<tr><td>[^<]*<\/td><td><a href="\/dashboard\/purchases\/([0-9a-f-]{36})">([^<]*)<\/a>/g)].map((m) => m[2].replace(/&amp;/g, '&'));

  const first = await client.get('/dashboard/purchases');
  t.is(rows(first.text).length, 25);
  t.is(rows(first.text)[0], 'Skyline Airways', 'newest first');
  const next = /<a href="([^"]+)" rel="next">/.exec(first.text)![1].replace(/&amp;/g, '&');
  const second = await client.get(next);
  t.is(rows(second.text).length, 4);
  t.is(new Set([...rows(first.text), ...rows(second.text)]).size, 29, 'no purchase twice, none missing');
  t.false(/rel="next"/.test(second.text));

  t.deepEqual(rows((await client.get(`/dashboard/purchases?agent=${acme.agents.travel.id}`)).text), ['Skyline Airways']);
  t.deepEqual(rows((await client.get('/dashboard/purchases?status=REJECTED')).text), ['Shady Goods Ltd']);
  t.deepEqual(rows((await client.get('/dashboard/purchases?outcome=REJECTED')).text), ['Shady Goods Ltd']);
  t.deepEqual(rows((await client.get('/dashboard/purchases?merchant=shop%2026')).text), ['Paper Shop 26']);
  t.deepEqual(rows((await client.get('/dashboard/purchases?merchant=.*')).text), [], 'the search is text, not a pattern');
  // Days named by when the purchases were requested, in Berlin, not by the clock now: a run across midnight there
  // made them yesterday. The flight's day holds it; the day before the first purchase holds none.
  const flightDay = await periodOfPurchase(app.store.db, flight.body.purchaseRequest.id);
  const earliest = (await app.store.db.collection('purchases').find({ organizationId: acme.organizationId }).toArray()).reduce((min, p) => Math.min(min, p.requestedAt.getTime()), Infinity);
  const dayBefore = dayOf(new Date(earliest - 86_400_000), 'Europe/Berlin');
  t.is(rows((await client.get(`/dashboard/purchases?from=${flightDay}&to=${flightDay}&agent=${acme.agents.travel.id}`)).text).length, 1);
  t.is(rows((await client.get(`/dashboard/purchases?to=${dayBefore}`)).text).length, 0);
  const bad = await client.get('/dashboard/purchases?from=yesterday&status=LOST&cursor=abc');
  t.is(bad.status, 400);
  t.regex(bad.text, /role="alert">Choose a status from the list\. From is a date like 2026-11-23\. This page link is not valid/);
});

test('a dashboard purchase form submitted twice records one purchase; bad amounts are explained', async (t) => {
  const { app, acme } = await setUp(t);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  const form = await client.get('/dashboard/purchases/new');
  const fields = { csrf: field(form.text, 'csrf'), token: field(form.text, 'token'), agent: acme.agents.buyer.id, merchant: 'Paper Co', amount: '12.5', currency: 'EUR', reason: 'Paper' };
  const once = await client.post('/dashboard/purchases', fields);
  const twice = await client.post('/dashboard/purchases', fields);
  t.is(once.status, 303);
  t.is(twice.location, once.location);
  const id = once.location!.split('/').pop()!;
  const read = (await app.request(`/v1/purchase-requests/${id}`, { key: acme.keys['buyer-key'] })).body.purchase;
  t.is(read.amountMinor, '1250');
  t.is(read.origin, 'DASHBOARD');

  const tooPrecise = await client.post('/dashboard/purchases', { ...fields, token: 'b'.repeat(43), amount: '12.505' });
  t.is(tooPrecise.status, 400);
  t.regex(tooPrecise.text, /at most as many decimals as EUR has/);
  const yen = await client.post('/dashboard/purchases', { ...fields, token: 'c'.repeat(43), amount: '1500', currency: 'JPY' });
  t.is(yen.status, 303);
  const otherOrgsAgent = await client.post('/dashboard/purchases', { ...fields, token: 'd'.repeat(43), agent: '0197a000-0000-7000-8000-000000000000' });
  t.is(otherOrgsAgent.status, 400);
  t.regex(otherOrgsAgent.text, /Choose one of your organisation&#39;s agents/);
});

test('admins see keys with their last use and revoke them; the API refuses a revoked key at once', async (t) => {
  const { app, acme } = await setUp(t);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  const prefix = (await app.store.db.collection<{ _id: string; prefix: string }>('api_keys').findOne({ _id: acme.keyIds['travel-key'] }))!.prefix;
  const row = (html: string) => new RegExp(`<td class="codes">${prefix}</td>.*?</tr>`, 's').exec(html)![0];
  t.regex(row((await client.get('/dashboard/keys')).text), /<td>never<\/td>/);
  t.is((await app.request('/v1/simulations/current-policies', { key: acme.keys['travel-key'], body: { merchant: 'X', amountMinor: '1', reason: 'r', currency: 'USD' } })).status, 200);
  t.regex(row((await client.get('/dashboard/keys')).text), /Travel booker.*\d{4}, \d\d:\d\d/s);
  const revoked = await client.post(`/dashboard/keys/${acme.keyIds['travel-key']}/revoke`, { csrf: await client.csrf() });
  t.is(revoked.status, 303);
  t.regex(row((await client.get('/dashboard/keys?revoked=1')).text), /revoked/);
  const refused = await app.request('/v1/simulations/current-policies', { key: acme.keys['travel-key'], body: { merchant: 'X', amountMinor: '1', reason: 'r', currency: 'USD' } });
  t.is(refused.status, 401);
  t.is(refused.body.error.code, 'api_key_revoked');
});

test('admins see connections (application, agent, scopes, who granted, last use) and revoke them', async (t) => {
  const { app, acme } = await setUp(t, { env: { WEBHOOK_UNSAFE_ALLOW_LOCAL: '1' } });
  const metadata = await startMetadataServer('Claude Desktop');
  t.teardown(() => metadata.close());
  const tokens = await connect(app, { ...acme, personId: acme.people.ana.id, email: acme.people.ana.email }, metadata.clientId);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  const page = await client.get('/dashboard/connections');
  t.regex(page.text, /Claude Desktop.*Office buyer.*purchase:check purchase:read purchase:request.*Ana Admin.*never/s);
  const body = { merchant: 'X', amountMinor: '1', reason: 'r' };
  t.is((await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body })).status, 200);
  t.notRegex((await client.get('/dashboard/connections')).text, /<td>never<\/td>/);
  const revoked = await client.post(`/dashboard/connections/${tokens.connectionId}/revoke`, { csrf: await client.csrf() });
  t.is(revoked.status, 303);
  t.regex((await client.get('/dashboard/connections')).text, /revoked \d/);
  const refused = await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body });
  t.is(refused.status, 403);
  t.is(refused.body.error.code, 'connection_unauthorized');
});

test('policies: the active version and the draft, with the draft-versus-active simulation side by side', async (t) => {
  const { app, acme } = await setUp(t);
  // A draft that would ask a person above 100 EUR instead of 200 EUR.
  const manifest = acmeManifest('acme');
  const office = manifest.policies[0];
  const draft = { ...office, activate: false, rules: office.rules.map((r) => (r.effect === 'REQUIRE_APPROVAL' ? { ...r, amountMinor: '10000' } : r)) };
  const applied = await app.admin('/admin/manifests', { body: { ...manifest, people: [ANA, VIC, PAM], policies: [draft, manifest.policies[1]] } });
  t.is(applied.status, 200);
  const client = new Client(app.url);
  await client.signIn(acme.people.vic.email);
  const page = await client.get('/dashboard/policies');
  t.regex(page.text, /Active version 1.*Draft version 2/s);
  t.regex(page.text, /Ask a person for one purchase over €100\.00/);
  const compared = await client.get(`/dashboard/policies?policy=${acme.policies.office.id}&merchant=Paper+Co&amount=150.00&currency=EUR`);
  t.is(compared.status, 200);
  t.regex(compared.text, /data-simulation="Draft"><h4>Draft<\/h4><p><span class="badge REQUIRES_APPROVAL">/);
  t.regex(compared.text, /data-simulation="Active"><h4>Active<\/h4><p><span class="badge APPROVED">/);
  // A simulation writes nothing.
  t.is(await app.store.db.collection('purchases').countDocuments({}), 0);
  const bad = await client.get(`/dashboard/policies?policy=${acme.policies.office.id}&merchant=Paper&amount=abc&currency=EUR`);
  t.regex(bad.text, /role="alert">Write the amount in EUR/);
});

test('a suspended organisation\'s dashboard closes: sign-in refused, sessions ended', async (t) => {
  const { app, acme } = await setUp(t);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  t.is((await client.get('/dashboard')).status, 200);
  t.is((await app.admin(`/admin/organizations/${acme.organizationId}`, { method: 'PATCH', body: { status: 'SUSPENDED' } })).status, 200);
  t.is((await client.get('/dashboard')).location, '/dashboard/sign-in');
  const again = await new Client(app.url).signIn(acme.people.ana.email);
  t.is(again.status, 403);
  t.regex(again.text, /suspended/);
});

test('suspending an organisation ends its sessions there and then: made active again, it opens no session from before', async (t) => {
  const { app, acme } = await setUp(t);
  const manifest = dashboardManifest('acme', [ANA, VIC, PAM]);
  const byApi = (status: string) => app.admin(`/admin/organizations/${acme.organizationId}`, { method: 'PATCH', body: { status } });
  const byManifest = (status: string) => applyManifest(app, { ...manifest, organization: { ...manifest.organization, status } });
  for (const [how, suspend] of [['the operator API', byApi], ['a manifest', byManifest]] as const) {
    const client = new Client(app.url);
    await client.signIn(acme.people.ana.email);
    t.is((await client.get('/dashboard')).status, 200);
    // Suspended and made active again before the session's next request: whoever held it is still out.
    await suspend('SUSPENDED');
    await suspend('ACTIVE');
    t.is((await client.get('/dashboard')).location, '/dashboard/sign-in', how);
  }
});

test('the inbox notice comes only from its own two answers: a query value never reaches an object\'s prototype', async (t) => {
  const { app, acme } = await setUp(t);
  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  t.true((await ana.get('/dashboard?answered=APPROVED')).text.includes('Approved: the purchase can go ahead.'));
  for (const value of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    const page = await ana.get(`/dashboard?answered=${value}`);
    t.is(page.status, 200);
    t.false(/class="notice"/.test(page.text), value);
    t.false(page.text.includes('native code'), value);
  }
});

test('signing in from a page\'s link returns to that page; a return address off the dashboard is ignored', async (t) => {
  const { app, acme } = await setUp(t);
  const id = await pending(app, acme);
  const client = new Client(app.url);
  const sent = await client.get(`/dashboard/purchases/${id}`);
  t.is(sent.location, `/dashboard/sign-in?next=${encodeURIComponent(`/dashboard/purchases/${id}`)}`);
  const form = await client.get(sent.location!);
  const back = await client.post('/dashboard/sign-in', { token: field(form.text, 'token'), next: field(form.text, 'next'), email: acme.people.ana.email, password: PASSWORD });
  t.is(back.status, 303);
  t.is(back.location, `/dashboard/purchases/${id}`);
  // Signed in already, the sign-in page sends you on.
  t.is((await client.get(`/dashboard/sign-in?next=${encodeURIComponent('/dashboard/budgets')}`)).location, '/dashboard/budgets');
  for (const elsewhere of ['https://evil.example/dashboard', '//evil.example/dashboard', '/dashboard//evil.example', '/\\evil.example', '/dashboard/sign-in', '/dashboard/../oauth/consent', '/dashboard/%2e%2e/oauth/consent', 'javascript:alert(1)', '/dashboard/"><script>']) {
    const other = new Client(app.url);
    const page = await other.get(`/dashboard/sign-in?next=${encodeURIComponent(elsewhere)}`);
    t.is(page.status, 200, elsewhere);
    t.false(page.text.includes('name="next"'), elsewhere);
    const res = await other.post('/dashboard/sign-in', { token: field(page.text, 'token'), next: elsewhere, email: acme.people.ana.email, password: PASSWORD });
    t.is(res.location, '/dashboard', elsewhere);
  }
});

test('a page that fails on our side is not cached either: it names the person and holds their session\'s CSRF token', async (t) => {
  const { app, acme } = await setUp(t);
  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  const csrf = await ana.csrf();
  app.deps.collections.agents.find = () => {
    throw new Error('the store broke');
  };
  const logged: string[] = [];
  app.deps.log.error = (msg) => logged.push(msg);
  const broken = await ana.get('/dashboard/purchases/new');
  t.is(broken.status, 500);
  t.deepEqual(logged, ['unhandled error']);
  t.regex(broken.text, /Something went wrong on our side/);
  t.true(broken.text.includes(csrf));
  t.is(broken.headers.get('cache-control'), 'no-store');
});

test('an inbox left open signs out after 30 idle minutes: its own polling does not keep the session alive', async (t) => {
  const c = clock();
  const { app, acme } = await setUp(t, { clock: c });
  const ana = new Client(app.url);
  await ana.signIn(acme.people.ana.email);
  t.is((await ana.get('/dashboard')).status, 200);
  // The page's script asks every 3 seconds; two minutes apart is enough to have slid the session.
  for (let minutes = 2; minutes < 30; minutes += 2) {
    c.advance(2 * 60 * 1000);
    t.is((await ana.get('/dashboard/inbox/live')).status, 200, `${minutes} minutes`);
  }
  c.advance(2 * 60 * 1000);
  const poll = await ana.get('/dashboard/inbox/live');
  t.is(poll.status, 303, 'the page reloads itself to the sign-in page');
  t.regex(poll.location!, /^\/dashboard\/sign-in/);
  t.is((await ana.get('/dashboard')).location, '/dashboard/sign-in');
});
