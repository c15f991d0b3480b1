// The people's dashboard in a real Chromium (playwright-core): what a person does, through the pages,
// with the API and the operator's view as the witnesses. Serial: the steps share one organisation's
// inbox and budget windows.
import test from 'ava';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import type { TestApp } from '../helpers/app.ts';
import { openBrowser, type BrowserSession } from '../helpers/browser.ts';
import { PASSWORD, setUpDashboardOrg, startDashboardApp, type DashboardOrg } from '../helpers/dashboard.ts';
import { dayOf } from '../helpers/windows.ts';

let app: TestApp;
let acme: DashboardOrg;
let globex: DashboardOrg;
let quick: DashboardOrg;
let duo: DashboardOrg;
const browsers: BrowserSession[] = [];

test.before(async () => {
  app = await startDashboardApp({ jobs: { sweepEvery: '1 second' } });
  acme = await setUpDashboardOrg(app, 'acme', [
    { handle: 'ana', name: 'Ana Admin', email: 'ana@acme.example', roles: ['approver', 'admin'] },
    { handle: 'vic', name: 'Vic Viewer', email: 'vic@acme.example', roles: ['viewer'] },
  ]);
  globex = await setUpDashboardOrg(app, 'globex', [{ handle: 'gus', name: 'Gus Globex', email: 'gus@globex.example' }]);
  // Approvals here expire after ten seconds, so that one can be watched expiring.
  quick = await setUpDashboardOrg(app, 'quick', [{ handle: 'quinn', name: 'Quinn Quick', email: 'quinn@quick.example' }], 'PT10S');
  // A two-person rule: above 200 EUR two distinct approvers must approve.
  duo = await setUpDashboardOrg(
    app,
    'duo',
    [
      { handle: 'dora', name: 'Dora Duo', email: 'dora@duo.example' },
      { handle: 'eli', name: 'Eli Duo', email: 'eli@duo.example' },
    ],
    undefined,
    (m) => {
      (m.policies[0].rules[1] as Record<string, unknown>).approvalsRequired = 2;
    },
  );
});

test.after.always(async () => {
  for (const b of browsers) await b.close();
  await app?.close();
});

async function browser(): Promise<BrowserSession> {
  const b = await openBrowser();
  browsers.push(b);
  return b;
}

async function signIn(page: Page, email: string) {
  await page.goto(`${app.url}/dashboard`);
  await page.waitForURL('**/dashboard/sign-in');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${app.url}/dashboard`);
}

/** An agent asks, through the API, for something that needs a person (above the 200 EUR threshold). */
async function askForApproval(org: DashboardOrg, merchant: string, amountMinor = '30000', reason = `Needed: ${merchant}`) {
  const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant, amountMinor, reason } });
  if (res.status !== 201 || res.body.decision.outcome !== 'REQUIRES_APPROVAL') throw new Error(`unexpected: ${res.status} ${res.text}`);
  return res.body.purchaseRequest.id as string;
}

const readback = async (org: DashboardOrg, id: string) => (await app.request(`/v1/purchase-requests/${id}`, { key: org.keys['buyer-key'] })).body.purchase;

/** The day's bar of the window a purchase holds, named by the day the purchase was requested in the organisation's zone,
 *  so that a run across midnight in Berlin reads the same window before and after. */
async function committedOnTheBar(page: Page, policyId: string, requestedAt: string) {
  const day = dayOf(requestedAt, 'Europe/Berlin');
  await page.goto(`${app.url}/dashboard/budgets`);
  const bar = page.locator(`li[data-window="${policyId}:EUR:DAY:${day}"] svg.bar`);
  return { committed: BigInt((await bar.getAttribute('data-committed'))!), held: BigInt((await bar.getAttribute('data-held'))!) };
}

test.serial('sign in; a pending approval appears without reloading; approving it moves the budget bar', async (t) => {
  const { page } = await browser();
  await signIn(page, acme.people.ana.email);
  await t.notThrowsAsync(page.getByRole('heading', { level: 1, name: 'Waiting for approval' }).waitFor());

  await page.goto(`${app.url}/dashboard`);
  await page.evaluate('window.sameDocument = "yes"');
  const id = await askForApproval(acme, 'Standing Desks Ltd');
  const card = page.locator(`li[data-id="${id}"]`);
  await card.waitFor({ timeout: 20_000 });
  t.is(await page.evaluate('window.sameDocument'), 'yes', 'the card arrived without a reload');
  t.regex(await card.innerText(), /€300\.00 at Standing Desks Ltd/);
  t.regex(await card.innerText(), /Office buyer/);
  t.regex(await card.innerText(), /APPROVAL_THRESHOLD_EXCEEDED/);
  t.regex(await card.innerText(), /approving leaves/);
  t.regex(await card.innerText(), /h \d+ min left/);
  t.regex(await page.locator('#inbox-status').innerText(), /1 new approval/);

  const requestedAt = (await readback(acme, id)).requestedAt as string;
  const before = await committedOnTheBar(page, acme.policies.office.id, requestedAt);
  await page.goto(`${app.url}/dashboard`);
  await card.getByLabel('Comment (optional)').fill('For the new office');
  await card.getByRole('button', { name: 'Approve' }).click();
  await page.waitForURL('**/dashboard?answered=APPROVED');
  t.regex(await page.getByRole('status').first().innerText(), /Approved/);
  t.is(await page.locator(`li[data-id="${id}"]`).count(), 0);

  const purchase = await readback(acme, id);
  t.is(purchase.status, 'APPROVED');
  t.deepEqual(purchase.approval.resolvedBy, { name: 'Ana Admin' });
  t.is(purchase.approval.comment, 'For the new office');
  t.is(purchase.decision.kind, 'APPROVAL_REEVALUATION');

  const after = await committedOnTheBar(page, acme.policies.office.id, requestedAt);
  t.is(after.committed - before.committed, 30000n, 'the approved amount moved onto the committed part of the bar');
  t.is(before.held - after.held, 30000n, 'and off the held part');
});

test.serial('the page an approval email opens answers it: approve there, with a comment', async (t) => {
  const { page } = await browser();
  const id = await askForApproval(acme, 'Ergonomic Chairs Co');
  await signIn(page, acme.people.ana.email);
  await page.goto(`${app.url}/dashboard/purchases/${id}`);
  const card = page.locator(`li[data-id="${id}"]`);
  await card.getByLabel('Comment (optional)').fill('From the email');
  await card.getByRole('button', { name: 'Approve' }).click();
  await page.waitForURL('**/dashboard?answered=APPROVED');
  const purchase = await readback(acme, id);
  t.is(purchase.status, 'APPROVED');
  t.is(purchase.approval.comment, 'From the email');
  await page.goto(`${app.url}/dashboard/purchases/${id}`);
  t.is(await page.locator(`li[data-id="${id}"]`).count(), 0, 'answered: no card left to press');
});

test.serial('reject another, with a comment; answering it again is refused with the operator API\'s message', async (t) => {
  const { page } = await browser();
  const id = await askForApproval(acme, 'Gold Plated Staplers');
  await signIn(page, acme.people.ana.email);
  const card = page.locator(`li[data-id="${id}"]`);
  await card.getByLabel('Comment (optional)').fill('Not these');
  await card.getByRole('button', { name: 'Reject' }).click();
  await page.waitForURL('**/dashboard?answered=REJECTED');
  const purchase = await readback(acme, id);
  t.is(purchase.status, 'REJECTED');
  t.is(purchase.approval.state, 'REJECTED');
  t.is(purchase.approval.comment, 'Not these');

  // A form still open in another tab: its answer reaches the command, which refuses it.
  const status = await page.evaluate(`(async () => {
    const csrf = document.querySelector('input[name=csrf]').value;
    const res = await fetch('/dashboard/approvals/${id}/answer', { method: 'POST', body: new URLSearchParams({ csrf, answer: 'APPROVE' }) });
    return res.status + ' ' + (await res.text());
  })()`);
  const operator = await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'ana' } });
  t.is(operator.status, 409);
  t.true(String(status).startsWith('409 '));
  t.true(String(status).includes(operator.body.error.message.replace(/'/g, '&#39;')), 'the same clear refusal as the CLI');
  t.is((await readback(acme, id)).status, 'REJECTED');
});

test.serial('an approval nobody answers is seen expiring: it leaves the inbox by itself', async (t) => {
  const { page } = await browser();
  const id = await askForApproval(quick, 'Slow Answers Inc');
  await signIn(page, quick.people.quinn.email);
  const card = page.locator(`li[data-id="${id}"]`);
  await card.waitFor();
  t.regex(await card.innerText(), /\d+ s left/);
  await card.waitFor({ state: 'detached', timeout: 60_000 });
  t.regex(await page.locator('#inbox-status').innerText(), /no longer waiting/);
  let purchase = await readback(quick, id);
  for (let i = 0; i < 100 && purchase.status !== 'EXPIRED'; i++) {
    await new Promise((r) => setTimeout(r, 200));
    purchase = await readback(quick, id);
  }
  t.is(purchase.status, 'EXPIRED');
  t.is(purchase.approval.state, 'EXPIRED');
});

test.serial('a dashboard purchase is decided by the engine and read through the API with origin DASHBOARD', async (t) => {
  const { page } = await browser();
  await signIn(page, acme.people.ana.email);
  await page.getByRole('link', { name: 'New purchase' }).click();
  await page.getByLabel('Agent').selectOption({ label: 'Office buyer' });
  await page.getByLabel('Merchant').fill('Paper & Pens Co');
  await page.getByLabel('Amount').fill('42.50');
  await page.getByLabel('Reason').fill('Printer paper for the team');
  await page.getByRole('button', { name: 'Request purchase' }).click();
  await page.waitForURL(/\/dashboard\/purchases\/[0-9a-f-]{36}$/);
  const id = page.url().split('/').pop()!;
  t.regex(await page.locator('h1').innerText(), /€42\.50 at Paper & Pens Co/);
  t.regex(await page.locator('main').innerText(), /DASHBOARD \(by Ana Admin\)/);

  const purchase = await readback(acme, id);
  t.is(purchase.origin, 'DASHBOARD');
  t.deepEqual(purchase.initiatedBy, { name: 'Ana Admin' });
  t.is(purchase.submittedVia, null);
  t.is(purchase.amountMinor, '4250');
  t.is(purchase.status, 'APPROVED');
  t.is(purchase.agent.name, 'Office buyer');
  // The other agent's credential cannot read it: a dashboard purchase belongs to the agent it was made for.
  t.is((await app.request(`/v1/purchase-requests/${id}`, { key: acme.keys['travel-key'] })).status, 404);
});

test.serial('a viewer sees the inbox but cannot approve; an answer given elsewhere removes the card', async (t) => {
  const id = await askForApproval(acme, 'Viewer Test Supplies');
  const { page } = await browser();
  await signIn(page, acme.people.vic.email);
  const card = page.locator(`li[data-id="${id}"]`);
  await card.waitFor();
  t.is(await card.getByRole('button', { name: 'Approve' }).count(), 0);
  t.is(await page.getByRole('link', { name: 'API keys' }).count(), 0);
  const status = await page.evaluate(`(async () => {
    const csrf = document.querySelector('input[name=csrf]').value;
    const res = await fetch('/dashboard/approvals/${id}/answer', { method: 'POST', body: new URLSearchParams({ csrf, answer: 'APPROVE' }) });
    return res.status;
  })()`);
  t.is(status, 403);
  t.is((await readback(acme, id)).approval.state, 'PENDING');
  // Answered elsewhere (here by the operator CLI's API, in Ana's name): it leaves the viewer's inbox by itself.
  t.is((await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'REJECT', person: 'ana' } })).status, 200);
  await card.waitFor({ state: 'detached', timeout: 20_000 });
  t.regex(await page.locator('#inbox-status').innerText(), /1 no longer waiting/);
});

test.serial('a person of another organisation sees none of it', async (t) => {
  const id = await askForApproval(acme, 'Acme Secrets Ltd');
  const { page } = await browser();
  await signIn(page, globex.people.gus.email);
  t.true(await page.getByText('Nothing is waiting for an answer.').isVisible());
  t.is(await page.locator(`li[data-id="${id}"]`).count(), 0);
  await page.goto(`${app.url}/dashboard/purchases?merchant=Acme`);
  t.true(await page.getByText('No purchases match.').isVisible());
  const theirs = await page.goto(`${app.url}/dashboard/purchases/${id}`);
  const theirsText = await page.locator('main').innerText();
  const nobodys = await page.goto(`${app.url}/dashboard/purchases/0197a000-0000-7000-8000-000000000000`);
  t.is(theirs!.status(), 404);
  t.is(nobodys!.status(), 404);
  t.is(theirsText, await page.locator('main').innerText(), 'another tenant\'s purchase reads exactly like one that does not exist');
  await page.goto(`${app.url}/dashboard/budgets`);
  t.notRegex(await page.locator('main').innerText(), /Standing Desks|Acme/);
});

test.serial('a forged cross-site form post is refused and changes nothing', async (t) => {
  const id = await askForApproval(acme, 'Forgery Target Ltd');
  const { page } = await browser();
  await signIn(page, acme.people.ana.email);
  // Another site (localhost is a different site from 127.0.0.1) that posts the answer form on load.
  const evil: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><form id="f" method="post" action="${app.url}/dashboard/approvals/${id}/answer">
<input name="answer" value="APPROVE"><input name="csrf" value="guessed"></form><script>document.getElementById('f').submit()</script>`);
  });
  evil.listen(0, '127.0.0.1');
  await once(evil, 'listening');
  try {
    const response = page.waitForResponse((r) => r.url().endsWith(`/dashboard/approvals/${id}/answer`));
    await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
    t.is((await response).status(), 403);
    await page.waitForURL(`${app.url}/dashboard/approvals/${id}/answer`);
    await page.getByText('came from another site').waitFor();
  } finally {
    evil.closeAllConnections();
    evil.close();
  }
  t.is((await readback(acme, id)).approval.state, 'PENDING');
});

test.serial('an admin revokes an API key from the keys page, after confirming; the API refuses it at once', async (t) => {
  const { page } = await browser();
  await signIn(page, acme.people.ana.email);
  await page.getByRole('link', { name: 'API keys' }).click();
  const prefix = (await app.store.db.collection<{ _id: string; prefix: string }>('api_keys').findOne({ _id: acme.keyIds['travel-key'] }))!.prefix;
  let asked = '';
  page.once('dialog', (dialog) => {
    asked = dialog.message();
    void dialog.accept();
  });
  await page.getByRole('button', { name: `Revoke key ${prefix}` }).click();
  await page.waitForURL('**/dashboard/keys?revoked=1');
  t.is(asked, `Revoke key ${prefix}? It cannot be undone.`);
  t.regex(await page.getByRole('row', { name: new RegExp(prefix) }).innerText(), /revoked/);
  const refused = await app.request('/v1/simulations/current-policies', { key: acme.keys['travel-key'], body: { merchant: 'X', amountMinor: '1', reason: 'r', currency: 'USD' } });
  t.is(refused.body.error.code, 'api_key_revoked');
});

test.serial('sign out ends the session: the old cookie opens nothing', async (t) => {
  const { page, context } = await browser();
  await signIn(page, acme.people.ana.email);
  const cookie = (await context.cookies()).find((c) => c.name === 'cmp_dashboard');
  t.truthy(cookie);
  t.true(cookie!.httpOnly);
  t.is(cookie!.sameSite, 'Lax');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL('**/dashboard/sign-in');
  await page.goto(`${app.url}/dashboard/purchases`);
  t.true(page.url().endsWith('/dashboard/sign-in?next=%2Fdashboard%2Fpurchases'));
  const replay = await fetch(`${app.url}/dashboard`, { redirect: 'manual', headers: { cookie: `cmp_dashboard=${cookie!.value}` } });
  t.is(replay.status, 303);
  t.is(replay.headers.get('location'), '/dashboard/sign-in');
});

test.serial('a two-person rule: the first approval is recorded and shown live to the second approver, whose approval decides', async (t) => {
  const dora = (await browser()).page;
  const eli = (await browser()).page;
  await signIn(dora, duo.people.dora.email);
  await signIn(eli, duo.people.eli.email);
  await eli.evaluate('window.sameDocument = "yes"');
  const id = await askForApproval(duo, 'Two Key Safes Ltd');
  const doraCard = dora.locator(`li[data-id="${id}"]`);
  const eliCard = eli.locator(`li[data-id="${id}"]`);
  await doraCard.waitFor({ timeout: 20_000 });
  await eliCard.waitFor({ timeout: 20_000 });
  t.regex(await doraCard.innerText(), /0 of 2 approvals/);

  await doraCard.getByLabel('Comment (optional)').fill('One key turned');
  await doraCard.getByRole('button', { name: 'Approve' }).click();
  await dora.waitForURL('**/dashboard?answered=PENDING_APPROVAL');
  t.regex(await dora.getByRole('status').first().innerText(), /waits for more approvers/);
  const stillThere = dora.locator(`li[data-id="${id}"]`);
  t.regex(await stillThere.innerText(), /1 of 2 approvals/);
  t.regex(await stillThere.innerText(), /Dora Duo approved .*: “One key turned”/);
  t.is(await stillThere.getByRole('button', { name: 'Approve' }).count(), 0, 'who answered has nothing left to press');
  t.is(await stillThere.getByRole('button', { name: 'Reject' }).count(), 0);
  t.regex(await stillThere.innerText(), /You approved it/);
  const pending = await readback(duo, id);
  t.is(pending.status, 'PENDING_APPROVAL');
  t.deepEqual(pending.approval.answers.map((a: any) => [a.name, a.answer, a.comment]), [['Dora Duo', 'APPROVE', 'One key turned']]);

  // The same person again (a form still open elsewhere): the command refuses it.
  const again = await dora.evaluate(`(async () => {
    const csrf = document.querySelector('input[name=csrf]').value;
    const res = await fetch('/dashboard/approvals/${id}/answer', { method: 'POST', body: new URLSearchParams({ csrf, answer: 'APPROVE' }) });
    return res.status + ' ' + (await res.text());
  })()`);
  t.true(String(again).startsWith('409 '), String(again).slice(0, 100));
  t.true(String(again).includes('data-code="approval_already_answered_by_person"'));

  // Eli's inbox learns of Dora's answer without a reload.
  await eliCard.getByText('1 of 2 approvals').waitFor({ timeout: 20_000 });
  t.regex(await eliCard.innerText(), /Dora Duo approved/);
  t.is(await eli.evaluate('window.sameDocument'), 'yes', 'the progress arrived without a reload');
  await eliCard.getByRole('button', { name: 'Approve' }).click();
  await eli.waitForURL('**/dashboard?answered=APPROVED');
  const done = await readback(duo, id);
  t.is(done.status, 'APPROVED');
  t.is(done.decision.kind, 'APPROVAL_REEVALUATION');
  t.deepEqual(done.approval.resolvedBy, { name: 'Eli Duo' });
  t.deepEqual(done.approval.answers.map((a: any) => a.name), ['Dora Duo', 'Eli Duo']);
  await eli.goto(`${app.url}/dashboard/purchases/${id}`);
  t.regex(await eli.locator('main').innerText(), /2 of 2 approvals/);
});

test.serial('a two-person rule on a dashboard purchase: its maker is not offered Approve, and is refused 403 elsewhere', async (t) => {
  const dora = (await browser()).page;
  await signIn(dora, duo.people.dora.email);
  await dora.getByRole('link', { name: 'New purchase' }).click();
  await dora.getByLabel('Agent').selectOption({ label: 'Office buyer' });
  await dora.getByLabel('Merchant').fill('Own Idea Ltd');
  await dora.getByLabel('Amount').fill('300.00');
  await dora.getByLabel('Reason').fill('My own request');
  await dora.getByRole('button', { name: 'Request purchase' }).click();
  await dora.waitForURL(/\/dashboard\/purchases\/[0-9a-f-]{36}$/);
  const id = dora.url().split('/').pop()!;
  await dora.goto(`${app.url}/dashboard`);
  const card = dora.locator(`li[data-id="${id}"]`);
  await card.waitFor();
  t.is(await card.getByRole('button', { name: 'Approve' }).count(), 0, 'the maker is not offered Approve');
  t.is(await card.getByRole('button', { name: 'Reject' }).count(), 1);
  t.regex(await card.innerText(), /You made this purchase/);
  const refused = await app.admin(`/admin/purchase-requests/${id}/answer`, { body: { answer: 'APPROVE', person: 'dora' } });
  t.is(refused.status, 403);
  t.is(refused.body.error.code, 'self_approval_not_permitted');
  t.is((await readback(duo, id)).approval.answers.length, 0);
});

test.serial('an agent\'s text cannot reorder what the approver reads: bidi overrides are not applied', async (t) => {
  // U+202E (right-to-left override): Chromium would draw "moc.nozama" as "amazon.com", and every word of
  // the explanation after it backwards, the threshold included.
  const id = await askForApproval(acme, '\u202Emoc.nozama');
  const { page } = await browser();
  await signIn(page, acme.people.ana.email);
  const card = page.locator(`li[data-id="${id}"]`);
  await card.waitFor();
  /** Whether the pieces of an element's text are drawn left to right, in the order they were written. */
  const drawnInOrder = (selector: string, pieces: string[]) =>
    // Runs in Chromium (this project's types have no DOM, hence `any`).
    card.locator(selector).first().evaluate((el: any, pieces: string[]) => {
      const text = [...el.childNodes].find((n: any) => n.nodeType === 3 && n.data.includes(pieces[0]));
      const xs = pieces.map((piece) => {
        const range = (globalThis as any).document.createRange();
        range.setStart(text, text.data.indexOf(piece));
        range.setEnd(text, text.data.indexOf(piece) + piece.length);
        return range.getBoundingClientRect().left as number;
      });
      return xs.every((x, i) => i === 0 || xs[i - 1] < x);
    }, pieces);
  t.true(await drawnInOrder('h2', ['moc', 'nozama']), 'the merchant reads as it was written');
  t.true(await drawnInOrder('p:has(.codes)', ['Needs approval', 'nozama', 'threshold', 'Office supplies']), 'the explanation reads forwards');
});

test.serial('a reason written on several lines is shown on several lines, in the inbox and on the purchase\'s page', async (t) => {
  const reason = 'Two chairs for the new hires.\nThe old ones are broken.';
  const id = await askForApproval(acme, 'Chairs Direct', '30000', reason);
  const { page } = await browser();
  await signIn(page, acme.people.ana.email);
  const card = page.locator(`li[data-id="${id}"]`);
  // innerText follows the CSS: under the default white-space the line break would read as a space.
  t.is(await card.locator('.lines').first().innerText(), reason);
  await page.goto(`${app.url}/dashboard/purchases/${id}`);
  t.is(await page.locator('dt:text-is("Reason") + dd').innerText(), reason);
});
