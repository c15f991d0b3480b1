// A receipt from MCP `request_purchase` binds the arguments the assistant sent: recomputed as
// docs/integrate/receipts.md spells it (field order included), whatever order the assistant gave them in.
import test from 'ava';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { TestApp } from '../helpers/app.ts';
import { connect, setUpOrg, startConnectionsApp, startMetadataServer, type MetadataServer } from '../oauth/helpers.ts';

let app: TestApp;
let meta: MetadataServer;

test.before(async () => {
  app = await startConnectionsApp({});
  meta = await startMetadataServer('Receipt Checker');
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
});

test('requestSha256 of an MCP request_purchase is what the receipts page says to hash, for arguments in any order', async (t) => {
  const doc = readFileSync('docs/integrate/receipts.md', 'utf8');
  const order = [.../fields in the order ((?:`\w+`,? )+)/.exec(doc)![1].matchAll(/`(\w+)`/g)].map((m) => m[1]);
  const org = await setUpOrg(app, 'mcp-receipt', 'PT1H');
  const tokens = await connect(app, org, meta.clientId, { scope: 'purchase:read purchase:request' });
  const client = new Client({ name: 'receipt-check', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${tokens.access_token}` } } }));
  const args: Record<string, unknown> = { reason: 'Paper', metadata: { z: 1, a: 'é' }, category: null, amountMinor: 1500, merchant: 'Paper Co', idempotencyKey: 'receipt-1' };
  const result = await client.callTool({ name: 'request_purchase', arguments: args });
  const payload = JSON.parse(Buffer.from((result.structuredContent as { receipt: string }).receipt.split('.')[1], 'base64url').toString());
  const documented = Object.fromEntries(order.filter((name) => name in args).map((name) => [name, args[name]]));
  t.is(payload.requestSha256, createHash('sha256').update(JSON.stringify(documented), 'utf8').digest('hex'));
  await client.close();
});
