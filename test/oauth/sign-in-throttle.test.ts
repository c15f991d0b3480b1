// The OAuth sign-in page and the dashboard's share one sign-in throttle (per email and per address,
// 15 minutes): guesses sent at once are checked no more than the limit allows, failures on either
// page count on both, and a locked account or address is refused on both, even for the right password.
import test from 'ava';
import { MAX_FAILURES_PER_ADDRESS } from '../../src/identity/people/sign-in.ts';
import { PASSWORD, clock, oauthSignIn, openDashboardSignIn, openSignIn, setUpOrg, startConnectionsApp, startMetadataServer, tally, type Clock } from './helpers.ts';

async function setUp(t: { teardown(fn: () => Promise<void>): void }, c?: Clock, behindProxy = true) {
  const app = await startConnectionsApp({ now: c?.now, behindProxy });
  t.teardown(() => app.close());
  const meta = await startMetadataServer();
  t.teardown(() => meta.close());
  const org = await setUpOrg(app);
  return { app, clientId: meta.clientId, email: org.email };
}

test('wrong passwords sent all at once are checked at most 5 times; then the right one is refused here and on the dashboard', async (t) => {
  const { app, clientId, email } = await setUp(t);
  // Fifteen authorization requests (a fresh one is anyone's for the asking), answered together from fifteen addresses.
  const forms = await Promise.all(Array.from({ length: 15 }, () => openSignIn(app, clientId)));
  const answers = await Promise.all(forms.map((form, i) => form.submit(email, `wrong password ${i}`, `198.51.100.${i}`)));
  t.deepEqual(tally(answers), { 401: 5, 429: 10 });
  t.regex(answers.find((a) => a.status === 429)!.text, /Too many failed sign-ins\. Try again in 1[45] minutes\./, '15 minutes from the first failure: 14 on a machine that took over a minute for the password checks before');

  const right = await oauthSignIn(app, clientId, email, PASSWORD, '198.51.100.99');
  t.is(right.status, 429);
  t.is((await (await openDashboardSignIn(app)).submit(email, PASSWORD, '198.51.100.99')).status, 429);
});

test('failures on the OAuth sign-in page lock the account on the dashboard too; the request\'s own limit still ends it at five', async (t) => {
  const { app, clientId, email } = await setUp(t);
  const form = await openSignIn(app, clientId);
  for (let i = 0; i < 4; i++) t.is((await form.submit(email, 'wrong password', `198.51.100.${i}`)).status, 401);
  const fifth = await form.submit(email, 'wrong password', '198.51.100.4');
  t.is(fifth.status, 401);
  t.regex(fifth.text, /Too many attempts/);
  t.is((await (await openDashboardSignIn(app)).submit(email, PASSWORD, '198.51.100.99')).status, 429, 'the dashboard refuses the locked account');
  t.is((await oauthSignIn(app, clientId, email, PASSWORD, '198.51.100.99')).status, 429, 'so does a new authorization request');
});

test('failures on the dashboard lock the account on the OAuth sign-in page too, until the 15 minutes are over', async (t) => {
  const c = clock();
  const { app, clientId, email } = await setUp(t, c);
  for (let i = 0; i < 5; i++) t.is((await (await openDashboardSignIn(app)).submit(email, 'wrong password', `203.0.113.${i}`)).status, 401);
  const locked = await oauthSignIn(app, clientId, email, PASSWORD, '203.0.113.99');
  t.is(locked.status, 429);
  t.regex(locked.text, /Too many failed sign-ins\. Try again in 1[45] minutes\./, '15 minutes from the first failure: 14 on a machine that took over a minute for the password checks before');

  c.advance(15 * 60 * 1000 + 1000);
  const after = await oauthSignIn(app, clientId, email, PASSWORD, '203.0.113.99');
  t.is(after.status, 303, 'the window ends');
  t.regex(after.location!, /^\/oauth\/consent\?request=/);
});

test('the right password on either page clears the account\'s earlier failures on both', async (t) => {
  const { app, clientId, email } = await setUp(t);
  const dashboard = async (password: string, i: number) => (await (await openDashboardSignIn(app)).submit(email, password, `198.51.100.${i}`)).status;
  for (let i = 0; i < 4; i++) t.is(await dashboard('wrong password', i), 401);
  t.is((await oauthSignIn(app, clientId, email, PASSWORD, '198.51.100.50')).status, 303);
  for (let i = 0; i < 4; i++) t.is(await dashboard('wrong password', 10 + i), 401, 'four more failures, not eight in a row');
  t.is(await dashboard(PASSWORD, 20), 303);
});

test('failures from one address on either page count together, and block that address on both', async (t) => {
  const { app, clientId, email } = await setUp(t);
  for (let i = 0; i < 10; i++) {
    t.is((await oauthSignIn(app, clientId, `guess${i}@acme.example`, 'wrong password', '203.0.113.7')).status, 401);
    t.is((await (await openDashboardSignIn(app)).submit(`other${i}@acme.example`, 'wrong password', '203.0.113.7')).status, 401);
  }
  t.is((await oauthSignIn(app, clientId, email, PASSWORD, '203.0.113.7')).status, 429);
  t.is((await (await openDashboardSignIn(app)).submit(email, PASSWORD, '203.0.113.7')).status, 429);
  t.is((await oauthSignIn(app, clientId, email, PASSWORD, '203.0.113.8')).status, 303, 'other addresses are not affected');
});

test('over IPv6 the address throttle counts a /64, so a caller cannot step to the next address of its network', async (t) => {
  const { app, clientId, email } = await setUp(t);
  for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
    t.is((await oauthSignIn(app, clientId, `guess${i}@acme.example`, 'wrong password', `2001:db8:9:9::${(i + 1).toString(16)}`)).status, 401);
  }
  t.is((await oauthSignIn(app, clientId, email, PASSWORD, '2001:db8:9:9:abcd::1')).status, 429);
  t.is((await (await openDashboardSignIn(app)).submit(email, PASSWORD, '2001:db8:9:9::ffff')).status, 429, 'on the dashboard too');
  t.is((await oauthSignIn(app, clientId, email, PASSWORD, '2001:db8:9:a::1')).status, 303, 'another network is not affected');
});

test('under the default configuration (as `npm start` runs) a spoofed X-Forwarded-For does not reset the per-address throttle', async (t) => {
  // No TRUST_PROXY at all: the default must not let a client that reaches the service directly write
  // the address the throttle counts, or each guess could claim a fresh one.
  const { app, clientId, email } = await setUp(t, undefined, false);
  t.false(app.deps.config.trustProxy);
  for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
    const spoofed = `198.51.100.${i}`;
    t.is((await oauthSignIn(app, clientId, `guess${i}@acme.example`, 'wrong password', spoofed)).status, 401);
  }
  t.is((await oauthSignIn(app, clientId, email, PASSWORD, '198.51.100.200')).status, 429, 'a new spoofed address is still the same caller');
  t.is((await (await openDashboardSignIn(app)).submit(email, PASSWORD, '198.51.100.201')).status, 429, 'on the dashboard too');
});
