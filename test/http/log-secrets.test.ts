// Nothing secret reaches the log: keys, tokens, passwords and webhook secrets pass through
// every surface that takes or issues one, with the service logging at debug, and none of them is in
// any line. Only the public parts are allowed (a key's prefix).
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../src/log.ts';
import { configureWebhooks } from '../../src/webhooks/runtime.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { connect, PASSWORD, setUpOrg, startConnectionsApp, startMetadataServer } from '../oauth/helpers.ts';
import { ADMIN_TOKEN } from '../helpers/app.ts';

test('no key, token, password or signing secret is written to the log', async (t) => {
  const lines: string[] = [];
  const app = await startConnectionsApp({ log: createLogger('debug', (line) => lines.push(line)), env: { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('hex') } });
  configureWebhooks(app.deps, { lookup: async () => [{ address: '93.184.215.14', family: 4 }] });
  const meta = await startMetadataServer();
  t.teardown(async () => {
    await meta.close();
    await app.close();
  });

  const org = await setUpOrg(app, 'logged');
  const secrets: string[] = [ADMIN_TOKEN, PASSWORD, ...Object.values(org.keys)];
  const buyer = org.keys['buyer-key'];
  t.is((await app.request('/v1/purchase-requests', { key: buyer, body: { merchant: 'Paper Co', amountMinor: '1999', reason: 'Paper' } })).status, 201);
  // A key whose secret half is wrong, and one another environment issued.
  const wrong = buyer.slice(0, -8) + 'AAAAAAAA';
  const other = 'cmp_test_abcdefabcdef_' + 'B'.repeat(43);
  secrets.push(wrong, other);
  for (const key of [wrong, other]) t.is((await app.request('/v1/agents', { key })).status, 401);

  const tokens = await connect(app, org, meta.clientId);
  secrets.push(tokens.access_token, tokens.refresh_token);
  t.is((await app.request('/v1/simulations/current-policies', { key: tokens.access_token, body: { merchant: 'Paper Co', amountMinor: '1999', reason: 'Paper' } })).status, 200);

  const created = await app.request('/v1/webhooks', { key: org.keys['admin-key'], body: { url: 'https://hooks.example.com/in', subscribedTypes: ['purchase.approved'] } });
  t.is(created.status, 201, created.text);
  secrets.push(created.body.secret);
  const again = await applyManifest(app, acmeManifest('logged-too'));
  secrets.push(...Object.values(again.keys));

  t.true(lines.length > 0);
  const log = lines.join('\n');
  for (const secret of secrets) {
    t.is(typeof secret, 'string');
    t.false(log.includes(secret), `a secret in the log: ${secret.slice(0, 12)}…`);
  }
});
