// GET /v1/openapi.json: the API reference, with this deployment's URLs, readable without a credential.
import type Router from '@koa/router';
import { newRouter } from './router.ts';
import type { AppDeps } from '../app-deps.ts';
import { openApiDocument } from '../../schemas/openapi.ts';

export function openApiRoutes(deps: AppDeps): Router {
  const router = newRouter();
  const body = JSON.stringify(openApiDocument({ baseUrl: deps.config.baseUrl, authUrl: deps.config.authUrl }));
  router.get('/v1/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = body;
  });
  return router;
}
