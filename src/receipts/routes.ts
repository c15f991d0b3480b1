// GET /.well-known/jwks.json: the public halves of the deployment's signing keys (docs/integrate/receipts.md),
// for anyone, without a credential.
import type Router from '@koa/router';
import type { AppDeps } from '../app-deps.ts';
import { newRouter } from '../http/router.ts';
import { ensureSigningKey, publicKeys } from './keys.ts';

export function receiptRoutes(deps: AppDeps): Router {
  const router = newRouter();
  router.get('/.well-known/jwks.json', async (ctx) => {
    await ensureSigningKey(deps.store.db, deps.config, deps.log);
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = await publicKeys(deps.store.db, deps.config, deps.log);
  });
  return router;
}
