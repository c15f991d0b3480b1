// `npm run docs:screenshots`: takes the README's screenshots (docs/screenshots/) in a real Chromium
// (the dashboard tests' browser helper, test/helpers/browser.ts), after checking that each page shows
// what the picture is meant to show. The clock is frozen and the data fixed, so on one machine the same
// pixels (and bytes) come out every run: a changed PNG in a diff means a changed page. Run it when a
// page changes and commit the pictures; the test suite never writes them.
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { openBrowser } from '../test/helpers/browser.ts';
import { PASSWORD, setUpDashboardOrg, startDashboardApp } from '../test/helpers/dashboard.ts';

const DIR = fileURLToPath(new URL('../docs/screenshots/', import.meta.url));
const FROZEN = new Date('2026-11-23T09:41:00.000Z');

const app = await startDashboardApp({ now: () => FROZEN });
try {
  const acme = await setUpDashboardOrg(app, 'acme', [
    { handle: 'ana', name: 'Ana Admin', email: 'ana@acme.example', roles: ['approver', 'admin'] },
    { handle: 'bo', name: 'Bo Finance', email: 'bo@acme.example', roles: ['approver'] },
  ]);
  await mkdir(DIR, { recursive: true });

  const submit = async (key: string, merchant: string, amountMinor: string, reason: string, currency?: string) => {
    const res = await app.request('/v1/purchase-requests', { key: acme.keys[key], body: { merchant, amountMinor, reason, ...(currency ? { currency } : {}) } });
    assert.equal(res.status, 201, res.text);
  };
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
      assert.ok(png.subarray(1, 4).toString() === 'PNG' && png.length > 10_000, `${name}.png was written`);
      process.stdout.write(`docs/screenshots/${name}.png\n`);
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
    assert.equal(answer.status, 200, answer.text);

    await page.goto(`${app.url}/dashboard`);
    assert.equal(await page.locator('#inbox-list > li').count(), 2);
    assert.match(await page.locator('main').innerText(), /€279\.00 at Monitor World/);
    await shoot('inbox');

    await page.setViewportSize({ width: 390, height: 844 });
    await shoot('inbox-phone');
    await page.setViewportSize({ width: 1000, height: 800 });

    await page.goto(`${app.url}/dashboard/purchases/${approved}`);
    assert.match(await page.locator('main').innerText(), /Budgeted in Q4/);
    await page.locator('details summary').first().click();
    await shoot('purchase');

    await page.goto(`${app.url}/dashboard/budgets`);
    assert.match(await page.locator('main').innerText(), /€580\.50/);
    await shoot('budgets');
  } finally {
    await browser.close();
  }
} finally {
  await app.close();
}
