// The connection events (docs/reference/contract.md §6.2) carry the `data` the document publishes for them,
// no field more: test/approvals/event-payloads.test.ts covers the purchase, budget and agent events.
import test from 'ava';
import { checkEventData } from '../helpers/contract.ts';
import { connect, eventsOf, setUpOrg, startConnectionsApp, startMetadataServer, tokenForm } from './helpers.ts';

test('connection.created, connection.revoked and security.connection_token_reuse_detected match the document', async (t) => {
  const app = await startConnectionsApp();
  const meta = await startMetadataServer('Desk Assistant');
  try {
    const org = await setUpOrg(app);
    const reused = await connect(app, org, meta.clientId);
    const refresh = { grant_type: 'refresh_token', refresh_token: reused.refresh_token, client_id: meta.clientId };
    t.is((await tokenForm(app, refresh)).status, 200);
    t.is((await tokenForm(app, refresh)).status, 400, 'a used refresh token revokes the connection');
    const revoked = await connect(app, org, meta.clientId);
    t.is((await app.admin(`/admin/connections/${revoked.connectionId}`, { method: 'DELETE' })).status, 200);
    for (const [type, count] of [['connection.created', 2], ['connection.revoked', 2], ['security.connection_token_reuse_detected', 1]] as const) {
      const events = await eventsOf(app, type);
      t.is(events.length, count, type);
      for (const event of events) t.notThrows(() => checkEventData(type, JSON.parse(JSON.stringify(event.data))), type);
    }
    const [created] = await eventsOf(app, 'connection.created');
    t.throws(() => checkEventData('connection.created', { ...created.data, surprise: true }), { message: /surprise|additional/ });
  } finally {
    await meta.close();
    await app.close();
  }
});
