// Strict-Transport-Security (src/http/app.ts): sent on every answer when BASE_URL is https, errors and
// the dashboard included, and never when it is http (a browser would pin a host it cannot reach over TLS).
import test from 'ava';
import { startApp } from '../helpers/app.ts';

test('an https BASE_URL: every answer carries Strict-Transport-Security, a 401, a 404 and the dashboard included', async (t) => {
  const app = await startApp({ env: { BASE_URL: 'https://spend.example.com' } });
  t.teardown(() => app.close());
  for (const [path, status] of [['/health/live', 200], ['/v1/agents', 401], ['/nowhere', 404], ['/dashboard/sign-in', 200]] as const) {
    const res = await app.request(path);
    t.is(res.status, status, path);
    t.is(res.headers.get('strict-transport-security'), 'max-age=31536000', path);
  }
});

test('an http BASE_URL (npm start on a laptop): no Strict-Transport-Security', async (t) => {
  const app = await startApp();
  t.teardown(() => app.close());
  for (const path of ['/health/live', '/v1/agents', '/dashboard/sign-in']) {
    t.is((await app.request(path)).headers.get('strict-transport-security'), null, path);
  }
});
