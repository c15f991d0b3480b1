// GET /.well-known/jwks.json: the public halves of the deployment's signing keys (docs/integrate/receipts.md),
// for anyone, without a credential.
import type Router from '@koa/router';
import type { AppDeps } from '../app-deps.ts';
import { newRouter } from '../http/router.ts';
import { ensureSigningKey, publicKeys } from './keys.ts';

export function receiptRoutes(deps: AppDeps): Router {
  const router = newRouter();
  router.get('/.well-known/jwks.json', async (ctx) => {
    await ensureSigningKey(deps.store, deps.config, deps.log);
    // Asked for again each time: a rotated key signs at once, and a verifier fetching the JWKS for a kid
    // it does not know must not be served a copy from before the rotation (it is cached here, at the
    // configuration stamp).
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = await publicKeys(deps.store.db, deps.config, deps.log);
  });
  return router;
}
