// MCP list_purchases paged by its cursor while purchases keep arriving (docs/reference/contract.md §8, `limit` 1..50):
// a property over random page sizes and random purchases made between and during the pages, through the SDK's
// client over HTTP. The list is newest first, so what arrives after the first page is newer than all of it:
// the pages list exactly the purchases there were at the first page, each once, newest first, whatever arrives.
import test from 'ava';
import fc from 'fast-check';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { TestApp } from '../helpers/app.ts';
import { Client as DashboardClient, dashboardPurchase } from '../helpers/dashboard.ts';
import { mcpClient, toolError } from '../helpers/mcp.ts';
import { connect, setUpOrg, startConnectionsApp, startMetadataServer, type MetadataServer, type Org } from '../oauth/helpers.ts';

let app: TestApp;
let meta: MetadataServer;
let org: Org;
let person: DashboardClient;
// The service's clock, stopped by a test that needs purchases requested in the same millisecond (null: running).
let stopped: Date | null = null;

test.before(async () => {
  app = await startConnectionsApp({ now: () => stopped ?? new Date() });
  meta = await startMetadataServer('MCP Pager');
  org = await setUpOrg(app, 'paging');
  person = new DashboardClient(app.url);
  await person.signIn(org.email);
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

const client = (token: string) => mcpClient(app.url, token, 'mcp-paging');

const call = async (c: Client, name: string, args: Record<string, unknown>) => {
  const result = await c.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent as any;
};

// What arrives: a purchase of this connection, or one a person makes for its agent on the dashboard (every
// connection of the agent lists those, so they stay visible in later runs too).
const arrival = fc.constantFrom('mine' as const, 'dashboard' as const);

test('paging while purchases arrive: every purchase there was at the first page, once, newest first; nothing newer', async (t) => {
  const visible: string[] = []; // this agent's dashboard purchases, oldest first; each run adds its own submissions
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(arrival, { maxLength: 7 }),
      fc.array(fc.record({ limit: fc.integer({ min: 1, max: 4 }), during: fc.array(arrival, { maxLength: 3 }) }), { minLength: 1, maxLength: 12 }),
      async (before, pages) => {
        const conn = await connect(app, org, meta.clientId, { scope: 'purchase:read purchase:request' });
        const c = await client(conn.access_token);
        try {
          const seen = [...visible];
          const arrive = async (kind: 'mine' | 'dashboard') => {
            n++;
            if (kind === 'dashboard') return dashboardPurchase(person, org.agents.buyer.id, { merchant: `Desk ${n}`, amount: '1.00' });
            return (await call(c, 'request_purchase', { merchant: `Shop ${n}`, amountMinor: '100', reason: 'Supplies' })).purchaseRequest.id as string;
          };
          for (const kind of before) {
            const id = await arrive(kind);
            seen.push(id);
            if (kind === 'dashboard') visible.push(id);
          }
          const listed: { id: string; requestedAt: string }[] = [];
          let cursor: string | null = null;
          for (let i = 0; ; i++) {
            const { limit, during } = pages[i % pages.length];
            const ask = call(c, 'list_purchases', { limit, ...(cursor ? { cursor } : {}) });
            // The first page alone; from the second on, purchases arrive while the page is read.
            const arrived = i === 0 ? [] : await Promise.all(during.map(arrive));
            const page = await ask;
            if (i === 0) for (const id of await Promise.all(during.map(arrive))) arrived.push(id);
            arrived.forEach((id, k) => during[k] === 'dashboard' && visible.push(id));
            t.true(page.purchases.length <= limit);
            t.is(page.hasMore, page.nextCursor !== null);
            listed.push(...page.purchases.map((p: any) => ({ id: p.id, requestedAt: p.requestedAt })));
            if (!page.hasMore) break;
            cursor = page.nextCursor;
          }
          // Each once, and nothing else (concurrent arrivals commit in any order, so the set, then the order).
          const keys = listed.map((p) => `${p.requestedAt}|${p.id}`);
          const newestFirst = keys.every((k, i) => i === 0 || keys[i - 1] > k);
          return newestFirst && listed.length === seen.length && JSON.stringify(listed.map((p) => p.id).sort()) === JSON.stringify([...seen].sort());
        } finally {
          await c.close();
        }
      },
    ),
    { numRuns: Number(process.env.FC_RUNS ?? 8), seed: Number(process.env.FC_SEED ?? 1), includeErrorInReport: true },
  );
  t.pass();
});

const forged = (fields: object) => Buffer.from(JSON.stringify({ v: 1, ...fields })).toString('base64url');

test('limit 1..50: 50 is read, 0, 51 and 1.5 are invalid_request', async (t) => {
  const conn = await connect(app, org, meta.clientId, { scope: 'purchase:read' });
  const c = await client(conn.access_token);
  const fifty = await c.callTool({ name: 'list_purchases', arguments: { limit: 50 } });
  t.falsy(fifty.isError);
  t.true((fifty.structuredContent as any).purchases.length <= 50);
  for (const limit of [0, 51, 1.5, -1]) t.is(toolError(await c.callTool({ name: 'list_purchases', arguments: { limit } })).code, 'invalid_request', String(limit));
  await c.close();
});

test('cursors: one from another organisation or list only positions the caller\'s own list; forged ones are INVALID_CURSOR', async (t) => {
  const mine = await connect(app, await setUpOrg(app, 'paging-a'), meta.clientId, { scope: 'purchase:read purchase:request' });
  const c = await client(mine.access_token);
  const own: string[] = [];
  for (const merchant of ['Old shop', 'New shop']) own.push((await call(c, 'request_purchase', { merchant, amountMinor: '100', reason: 'Supplies' })).purchaseRequest.id);
  // Another organisation's purchases, made after: its first page's cursor lists this connection's own, and nothing of theirs.
  const other = await connect(app, await setUpOrg(app, 'paging-b'), meta.clientId, { scope: 'purchase:read purchase:request' });
  const oc = await client(other.access_token);
  for (const merchant of ['Their shop', 'Their other shop']) await call(oc, 'request_purchase', { merchant, amountMinor: '100', reason: 'Supplies' });
  const foreign = await call(oc, 'list_purchases', { limit: 1 });
  t.true(foreign.hasMore);
  t.deepEqual((await call(c, 'list_purchases', { cursor: foreign.nextCursor })).purchases.map((p: any) => p.id), [...own].reverse());
  // A position after all of its own (a purchase deleted since, or one of another list): its own, newest first.
  const later = forged({ t: '2999-01-01T00:00:00.000Z', id: '01a226af-2785-7445-8791-e25fa553b585' });
  t.deepEqual((await call(c, 'list_purchases', { cursor: later })).purchases.map((p: any) => p.id), [...own].reverse());
  for (const cursor of [
    '', // no list gives an empty cursor: as REST's `?cursor=`, not the same as leaving it out
    'bm90LWEtY3Vyc29y',
    later.slice(0, -3),
    forged({ t: '+010000-01-01T00:00:00.000Z', id: '01a226af-2785-7445-8791-e25fa553b585' }),
    forged({ t: '2026-01-01T00:00:00Z', id: '01a226af-2785-7445-8791-e25fa553b585' }),
    forged({ t: '2026-01-01T00:00:00.000Z', id: 'not-a-uuid' }),
    forged({ v: 2, t: '2026-01-01T00:00:00.000Z', id: '01a226af-2785-7445-8791-e25fa553b585' }),
  ]) {
    t.is(toolError(await c.callTool({ name: 'list_purchases', arguments: { cursor } })).issues?.[0].code, 'INVALID_CURSOR', cursor);
  }
  await Promise.all([c.close(), oc.close()]);
});

// Serial: it stops the clock, which no other test of this file may see.
test.serial('a cursor naming its purchase in upper-case hex positions the list as the cursor given did', async (t) => {
  const conn = await connect(app, await setUpOrg(app, 'paging-case'), meta.clientId, { scope: 'purchase:read purchase:request' });
  const c = await client(conn.access_token);
  const ids: string[] = [];
  stopped = new Date();
  try {
    for (const merchant of ['First shop', 'Second shop']) ids.push((await call(c, 'request_purchase', { merchant, amountMinor: '100', reason: 'Supplies' })).purchaseRequest.id);
  } finally {
    stopped = null;
  }
  const first = await call(c, 'list_purchases', { limit: 1 });
  t.deepEqual(first.purchases.map((p: any) => p.id), [ids[1]]);
  const position = JSON.parse(Buffer.from(first.nextCursor, 'base64url').toString('utf8'));
  t.regex(position.id, /[a-f]/); // a hex letter to write in upper case
  const upper = forged({ t: position.t, id: position.id.toUpperCase() });
  t.deepEqual((await call(c, 'list_purchases', { cursor: upper })).purchases.map((p: any) => p.id), [ids[0]]);
  await c.close();
});

// A purchase requested before the position a client has reached, but committed after its first page (a slow
// submission, another process whose clock is behind, or this one's stepped back): the keyset still lists every
// purchase there was at the first page once, and the late one once, where its requestedAt places it.
test.serial('paging across a clock stepped back: each purchase there was at the first page once; the late one by its requestedAt', async (t) => {
  const conn = await connect(app, await setUpOrg(app, 'paging-step'), meta.clientId, { scope: 'purchase:read purchase:request' });
  const c = await client(conn.access_token);
  const buy = async (merchant: string) => (await call(c, 'request_purchase', { merchant, amountMinor: '100', reason: 'Supplies' })).purchaseRequest.id as string;
  const there = [await buy('Shop A'), await buy('Shop B'), await buy('Shop C')];
  const first = await call(c, 'list_purchases', { limit: 1 });
  stopped = new Date(Date.now() - 60 * 60_000);
  let late: string;
  try {
    late = await buy('Late shop');
  } finally {
    stopped = null;
  }
  const listed: string[] = first.purchases.map((p: any) => p.id);
  for (let cursor = first.nextCursor; cursor !== null; ) {
    const page = await call(c, 'list_purchases', { limit: 1, cursor });
    listed.push(...page.purchases.map((p: any) => p.id));
    cursor = page.nextCursor;
  }
  t.deepEqual(listed, [...there.reverse(), late]);
  await c.close();
});
