// An approval requested over MCP goes on the same expiry schedule as one requested over REST: it
// expires on its Agenda job at expiresAt, not whenever the recurring sweep next runs.
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { TestApp } from '../helpers/app.ts';
import { connect, setUpOrg, startConnectionsApp, startMetadataServer, type MetadataServer } from '../oauth/helpers.ts';

let app: TestApp;
let meta: MetadataServer;

test.before(async () => {
  // The sweep is an hour away: only the approval's own job can expire it within the test.
  app = await startConnectionsApp({ jobs: { sweepEvery: '1 hour' } });
  meta = await startMetadataServer('Expiry Tester');
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

test('request_purchase schedules the approval expiry; it expires on time and releases its hold', async (t) => {
  const org = await setUpOrg(app, 'mcp-expiry', 'PT2S');
  const tokens = await connect(app, org, meta.clientId, { scope: 'purchase:read purchase:request' });
  const c = new Client({ name: 'expiry-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${tokens.access_token}` } } }));
  const r = await c.callTool({ name: 'request_purchase', arguments: { merchant: 'Paper Co', amountMinor: '25000', reason: 'A big order' } });
  const submitted = r.structuredContent as any;
  t.is(submitted.decision.outcome, 'REQUIRES_APPROVAL');
  const approval = await app.store.db.collection('approvals').findOne({ purchaseId: submitted.purchaseRequest.id });
  t.is(await app.store.db.collection('agendaJobs').countDocuments({ name: 'approvals.expire', 'data.approvalId': String(approval!._id) }), 1);

  const deadline = Date.now() + 30_000;
  let purchase: any;
  do {
    await sleep(200);
    purchase = ((await c.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: submitted.purchaseRequest.id } })).structuredContent as any).purchase;
  } while (purchase.status !== 'EXPIRED' && Date.now() < deadline);
  t.is(purchase.status, 'EXPIRED');
  t.like(purchase.approval, { state: 'EXPIRED', isPending: false });
  const window = await app.store.db.collection('budget_windows').findOne({ organizationId: org.organizationId, periodKind: 'DAY' });
  t.is(window!.heldMinor, 0);
  await c.close();
});
