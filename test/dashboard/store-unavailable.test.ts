// A dashboard page that meets a store unavailable for a moment (a MongoDB failover closes the
// connections, and the driver's one retry meets a closed one too): the same answer as /v1 and MCP give
// (docs/reference/decisions.md, "Storage busy or unreachable"), a page saying to try again with 503 and
// Retry-After, logged as a warning, not as an unexpected failure. Through the official driver against
// the wire listener's fail points.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import type { MongoClient } from 'mongodb';
import { openMongoStore } from '../../src/store/mongo.ts';
import type { Store } from '../../src/store/store.ts';
import { Client, setUpDashboardOrg, startDashboardApp } from '../helpers/dashboard.ts';
import { recordWarnings, type TestApp } from '../helpers/app.ts';
import { LANE_TIMEOUT_MS } from '../helpers/store.ts';
import { startListener, type TestListener } from '../helpers/wire.ts';

let wire: TestListener;
let store: Store;
let app: TestApp;
const name = `dashboard_unavailable_${randomBytes(4).toString('hex')}`;

test.before(async () => {
  wire = await startListener();
  store = await openMongoStore(wire.serviceUrl(name, 'appName=service-under-test'), { dbName: name, timeoutMs: LANE_TIMEOUT_MS });
  app = await startDashboardApp({ store });
});
test.after.always(async () => {
  await app?.close();
  await store?.close();
  await wire?.close();
});

test('a dropped store connection is a 503 page saying to try again, logged as a warning, and the next request is served', async (t) => {
  const acme = await setUpDashboardOrg(app, 'acme', [{ handle: 'ana', name: 'Ana Admin', email: 'ana@acme.example', roles: ['approver', 'admin'] }]);
  const client = new Client(app.url);
  await client.signIn(acme.people.ana.email);
  const logged = recordWarnings(app);
  // Only the page's own read of the agents: the session lookup before it goes to other collections.
  const admin = (store as unknown as { client: MongoClient }).client.db('admin');
  await admin.command({ configureFailPoint: 'failCommand', mode: { times: 2 }, data: { failCommands: ['find'], closeConnection: true, appName: 'service-under-test', namespace: `${name}.agents` } });
  const dropped = await client.get('/dashboard/purchases');
  const { count } = await admin.command({ configureFailPoint: 'failCommand', mode: 'off' });
  t.is(count, 2, 'the connection was closed on both attempts');
  t.is(dropped.status, 503);
  t.is(dropped.headers.get('retry-after'), '1');
  t.regex(dropped.text, /busy.*Try again in a moment/);
  t.is(dropped.headers.get('cache-control'), 'no-store', 'the page names the person and holds their CSRF token');
  t.deepEqual(logged, ['warn store unavailable: a request gave up']);
  const again = await client.get('/dashboard/purchases');
  t.is(again.status, 200);
});
