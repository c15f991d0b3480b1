// Takes the README's screenshots (docs/screenshots/) in a real Chromium, after checking that each page
// shows what the picture is meant to show. The clock is frozen and the data fixed, so on one machine
// the same pixels (and bytes) come out every run: a changed PNG in a diff means a changed page.
import test from 'ava';
import { mkdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { TestApp } from '../helpers/app.ts';
import { openBrowser } from '../helpers/browser.ts';
import { PASSWORD, setUpDashboardOrg, startDashboardApp, type DashboardOrg } from '../helpers/dashboard.ts';

const DIR = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const FROZEN = new Date('2026-11-23T09:41:00.000Z');

let app: TestApp;
let acme: DashboardOrg;

test.before(async () => {
  app = await startDashboardApp({ now: () => FROZEN });
  acme = await setUpDashboardOrg(app, 'acme', [
    { handle: 'ana', name: 'Ana Admin', email: 'ana@acme.example', roles: ['approver', 'admin'] },
    { handle: 'bo', name: 'Bo Finance', email: 'bo@acme.example', roles: ['approver'] },
  ]);
  await mkdir(DIR, { recursive: true });
});

test.after.always(async () => {
  await app?.close();
});

async function submit(key: string, merchant: string, amountMinor: string, reason: string, currency?: string) {
  const res = await app.request('/v1/purchase-requests', { key: acme.keys[key], body: { merchant, amountMinor, reason, ...(currency ? { currency } : {}) } });
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
  return res.body.purchaseRequest.id as string;
}

test.serial('screenshots of the inbox, a purchase and the budgets page', async (t) => {
  await submit('buyer-key', 'Paper & Pens Co', '4250', 'Printer paper for the team');
  await submit('buyer-key', 'Nordic Chairs', '18900', 'A chair for the new starter');
  await submit('travel-key', 'Skyline Airways', '1250000', 'Flight to the Lisbon customer workshop', 'USD');
  await submit('buyer-key', 'Monitor World', '27900', 'Second monitor for accounting');

  const browser = await openBrowser({ width: 1000, height: 800 });
  try {
    const { page } = browser;
    await page.goto(`${app.url}/dashboard/sign-in`);
    await page.getByLabel('Email').fill(acme.people.ana.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${app.url}/dashboard`);

    const shoot = async (name: string) => {
      const path = `${DIR}${name}.png`;
      await page.screenshot({ path, fullPage: true, animations: 'disabled', caret: 'hide' });
      const png = await readFile(path);
      t.true(png.subarray(1, 4).toString() === 'PNG' && png.length > 10_000, `${name}.png was written`);
    };

    // A dashboard purchase (no random key prefix on its page), answered through the operator API by
    // another approver: whoever made it may not approve it.
    await page.goto(`${app.url}/dashboard/purchases/new`);
    await page.getByLabel('Merchant').fill('Standing Desks Ltd');
    await page.getByLabel('Amount').fill('349.00');
    await page.getByLabel('Reason').fill('Standing desk for the design team');
    await page.getByRole('button', { name: 'Request purchase' }).click();
    await page.waitForURL(/\/dashboard\/purchases\/[0-9a-f-]{36}$/);
    const approved = page.url().split('/').pop()!;
    const answer = await app.admin(`/admin/purchase-requests/${approved}/answer`, { body: { answer: 'APPROVE', person: 'bo', comment: 'Budgeted in Q4' } });
    t.is(answer.status, 200);

    await page.goto(`${app.url}/dashboard`);
    t.is(await page.locator('#inbox-list > li').count(), 2);
    t.regex(await page.locator('main').innerText(), /€279\.00 at Monitor World/);
    await shoot('inbox');

    await page.setViewportSize({ width: 390, height: 844 });
    await shoot('inbox-phone');
    await page.setViewportSize({ width: 1000, height: 800 });

    await page.goto(`${app.url}/dashboard/purchases/${approved}`);
    t.regex(await page.locator('main').innerText(), /Budgeted in Q4/);
    await page.locator('details summary').first().click();
    await shoot('purchase');

    await page.goto(`${app.url}/dashboard/budgets`);
    t.regex(await page.locator('main').innerText(), /€580\.50/);
    await shoot('budgets');
  } finally {
    await browser.close();
  }
});
