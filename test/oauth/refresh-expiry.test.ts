// Refresh tokens last 90 days (docs/reference/contract.md §5.2, §8), counted from each rotation: a
// connection used at least every 90 days keeps working; a refresh token left longer is refused, which
// is not reuse, so the connection is not revoked for it. Its own file: the clock moves by months.
import test from 'ava';
import { clock, connect, setUpOrg, startConnectionsApp, startMetadataServer, tokenForm } from './helpers.ts';

const DAY = 24 * 60 * 60_000;

test('a refresh token lasts 90 days from its rotation; past that it is invalid_grant and the connection stays', async (t) => {
  const time = clock();
  const app = await startConnectionsApp({ now: time.now });
  t.teardown(() => app.close());
  const meta = await startMetadataServer();
  t.teardown(() => meta.close());
  const org = await setUpOrg(app);
  const tokens = await connect(app, org, meta.clientId);
  const refresh = (token: string) => tokenForm(app, { grant_type: 'refresh_token', refresh_token: token, client_id: meta.clientId });
  time.advance(89 * DAY);
  const first = await refresh(tokens.refresh_token);
  t.is(first.status, 200);
  const rotated = await first.json();
  time.advance(89 * DAY);
  const second = await refresh(rotated.refresh_token);
  t.is(second.status, 200, '178 days after the connection, 89 after its rotation');
  const last = await second.json();

  time.advance(90 * DAY + 60_000);
  const expired = await refresh(last.refresh_token);
  t.is(expired.status, 400);
  t.is((await expired.json()).error, 'invalid_grant');
  const connections = await app.admin(`/admin/connections?organizationId=${org.organizationId}`);
  t.is(connections.body.connections.find((c: { id: string }) => c.id === tokens.connectionId).revokedAt, null, 'an expired token is no reuse');
});
