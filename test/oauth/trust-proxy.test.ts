// TRUST_PROXY=0 (and the default, which is the same): clients reach the service directly, so
// X-Forwarded-For is theirs to write and is ignored; the per-address limits count the connection's own
// address. Only the Procfile's `web` line, behind the platform's router, sets TRUST_PROXY=1.
import test from 'ava';
import { REGISTRATION_LIMIT } from '../../src/identity/oauth/registration.ts';
import { startApp } from '../helpers/app.ts';
import { fetchJson } from './helpers.ts';

const metadata = { client_name: 'Direct Assistant', redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] };

const burst = async (url: string) => {
  const register = (i: number) =>
    fetchJson(`${url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': `198.51.100.${i}` }, body: JSON.stringify(metadata) });
  const statuses: number[] = [];
  for (let i = 0; i <= REGISTRATION_LIMIT; i++) statuses.push((await register(i)).status);
  return statuses;
};

test('by default (no TRUST_PROXY, as `npm start` runs) X-Forwarded-For does not escape the per-address limit', async (t) => {
  const app = await startApp();
  t.teardown(() => app.close());
  t.deepEqual(await burst(app.url), [...Array(REGISTRATION_LIMIT).fill(201), 429]);
});

test('with TRUST_PROXY=0 a caller cannot pick its address: X-Forwarded-For does not escape the per-address limit', async (t) => {
  const app = await startApp({ env: { TRUST_PROXY: '0' } });
  t.teardown(() => app.close());
  t.deepEqual(await burst(app.url), [...Array(REGISTRATION_LIMIT).fill(201), 429]);
});
