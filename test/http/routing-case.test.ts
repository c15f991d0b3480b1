// Paths are matched case-sensitively, everywhere. @koa/router matched routes without regard to case and
// the middleware mounted under a router's prefix with regard to it: POST /ADMIN/manifests ran without the
// operator token, and /V1/... reached handlers with no credential (a 500).
import test from 'ava';
import type Router from '@koa/router';
import { serviceApp } from '../../src/service-app.ts';
import { ADMIN_TOKEN, startApp, type TestApp } from '../helpers/app.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

/** Every route the service mounts, as [method, path] with its parameters filled in. */
function routes(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const mw of serviceApp(app.deps).middleware) {
    const router = (mw as { router?: Router }).router;
    if (!router) continue;
    for (const layer of router.stack) {
      if (typeof layer.path !== 'string' || layer.methods.length === 0) continue;
      const path = layer.path.replace(/:[A-Za-z]+/g, '01a2b3c4-0000-7000-8000-000000000000');
      // router.all('/mcp') lists every method Node knows (ACL, MKCOL...): a method no route of the service
      // implements is a 405 on any path, whatever its case.
      for (const method of layer.methods) if (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) out.push([method, path]);
    }
  }
  return out;
}

test('no route answers its path written in capitals, with or without credentials: 404, never a 500', async (t) => {
  const all = routes();
  t.true(all.length > 40, `${all.length} routes found`);
  t.true(all.some(([, path]) => path.startsWith('/admin/')));
  for (const [method, path] of all) {
    const shouted = path.toUpperCase();
    if (shouted === path) continue;
    for (const key of [null, ADMIN_TOKEN]) {
      const res = await app.request(shouted, { method, key, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
      t.is(res.status, 404, `${method} ${shouted} ${key ? 'with' : 'without'} the operator token: ${res.text.slice(0, 200)}`);
    }
  }
});

test('POST /ADMIN/manifests without the operator token creates nothing', async (t) => {
  const manifest = { organization: { handle: 'shouted', name: 'Shouted', currency: 'EUR', timezone: 'UTC' }, agents: [{ handle: 'a1', name: 'A1' }], apiKeys: [{ handle: 'k1' }] };
  const res = await app.request('/ADMIN/manifests', { body: manifest });
  t.is(res.status, 404);
  t.is(await app.store.db.collection('organizations').countDocuments({ handle: 'shouted' }), 0);
  // And the same request where it belongs still needs the token.
  t.is((await app.request('/admin/manifests', { body: manifest })).status, 401);
});

test('one trailing slash is the same path on every route; more is never a 500, and on /v1 and /admin a 404 has the error body', async (t) => {
  const all = routes();
  for (const [method, path] of all) {
    if (path.endsWith('/') || path.includes('*')) continue;
    for (const key of [null, ADMIN_TOKEN]) {
      const send = (p: string) => app.request(p, { method, key, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
      const plain = await send(path);
      const slash = await send(`${path}/`);
      t.is(slash.status, plain.status, `${method} ${path}/ ${key ? 'with' : 'without'} the operator token: ${slash.text.slice(0, 200)}`);
      const doubled = await send(`${path}//`);
      t.true(doubled.status < 500, `${method} ${path}//: ${doubled.text.slice(0, 200)}`);
      // The REST surfaces answer their error body (the dashboard answers HTML).
      if (doubled.status === 404 && /^\/(v1|admin)\//.test(path)) t.is(doubled.body?.error?.code, 'not_found', `${method} ${path}//`);
    }
  }
});
