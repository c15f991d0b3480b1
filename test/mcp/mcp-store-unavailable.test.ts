// An MCP tool that meets a store that is unavailable for a moment (a MongoDB failover closes the
// connections, and the driver's one retry meets a closed one too): the same answer as on /v1
// (docs/reference/decisions.md, "Storage busy or unreachable"), as a tool error, logged as a warning,
// not as an unexpected failure. Through the official driver against the wire listener's fail points.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { openMongoStore } from '../../src/store/mongo.ts';
import type { Store } from '../../src/store/store.ts';
import { recordWarnings, type TestApp } from '../helpers/app.ts';
import { startListener, type TestListener } from '../helpers/wire.ts';
import { LANE_TIMEOUT_MS } from '../helpers/store.ts';
import { connect, setUpOrg, startConnectionsApp, startMetadataServer, type MetadataServer } from '../oauth/helpers.ts';

let wire: TestListener;
let store: Store;
let app: TestApp;
let meta: MetadataServer;
const name = `mcp_unavailable_${randomBytes(4).toString('hex')}`;

test.before(async () => {
  wire = await startListener();
  store = await openMongoStore(wire.serviceUrl(name, 'appName=service-under-test'), { dbName: name, timeoutMs: LANE_TIMEOUT_MS });
  app = await startConnectionsApp({ store });
  meta = await startMetadataServer('MCP Failover');
});
test.after.always(async () => {
  await meta?.close();
  await app?.close();
  await store?.close();
  await wire?.close();
});

test('a dropped store connection is a tool error saying to retry shortly, logged as a warning, and the next call is served', async (t) => {
  const org = await setUpOrg(app);
  const { access_token } = await connect(app, org, meta.clientId);
  const c = new Client({ name: 'mcp-failover', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${access_token}` } } }));
  const asked = (await c.callTool({ name: 'request_purchase', arguments: { merchant: 'Staples', amountMinor: '100', reason: 'Pens' } })).structuredContent as any;
  const logged = recordWarnings(app);
  // Only the tool's own read: the token lookup before it goes to other collections.
  const admin = (store as unknown as { client: import('mongodb').MongoClient }).client.db('admin');
  await admin.command({ configureFailPoint: 'failCommand', mode: { times: 2 }, data: { failCommands: ['find'], closeConnection: true, appName: 'service-under-test', namespace: `${name}.purchase_views` } });
  const dropped = await c.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: asked.purchaseRequest.id } });
  const { count } = await admin.command({ configureFailPoint: 'failCommand', mode: 'off' });
  t.is(count, 2, 'the connection was closed on both attempts');
  t.true(dropped.isError);
  const error = JSON.parse((dropped.content as { text: string }[])[0].text).error;
  t.is(error.code, 'internal_error');
  t.regex(error.message, /busy.*Retry shortly/);
  t.deepEqual(logged, ['warn store unavailable: a request gave up']);
  const again = await c.callTool({ name: 'get_purchase', arguments: { purchaseRequestId: asked.purchaseRequest.id } });
  t.is((again.structuredContent as any).purchase.id, asked.purchaseRequest.id);
  await c.close();
});
