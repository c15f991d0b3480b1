// createApp(deps): the Koa application. No I/O happens here; main.ts and the tests supply deps.
import Koa from 'koa';
import type { Context, Next } from 'koa';
import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../app-deps.ts';
import { withRequestId } from '../log.ts';
import { errorMiddleware } from './error-middleware.ts';
import { authenticate } from '../identity/auth.ts';
import { adminRoutes } from '../admin/routes.ts';
import { agentRoutes } from '../agents/routes.ts';
import { policyRoutes, refuseAuthoring } from '../policies/routes.ts';
import { purchaseRoutes } from '../purchases/routes.ts';
import { simulationRoutes } from '../simulations/routes.ts';
import { webhookRoutes } from '../webhooks/routes.ts';
import type Router from '@koa/router';
import { connectionRouters } from '../identity/oauth/mount.ts';
import { connectionTokenResolver } from '../identity/connections/resolve-token.ts';
import { closeWhenStopping, healthRoutes } from './health.ts';
import { openApiRoutes } from './openapi-route.ts';
import { httpMetrics, metricsRoutes } from '../metrics/http.ts';
import { dashboardRoutes } from '../dashboard/routes.ts';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

function requestContext(deps: AppDeps) {
  return async (ctx: Context, next: Next) => {
    const given = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(given) ? given : randomUUID();
    ctx.set('X-Request-Id', requestId);
    const started = performance.now();
    await withRequestId(requestId, async () => {
      try {
        await next();
      } finally {
        deps.log.info('request', { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round((performance.now() - started) * 10) / 10 });
      }
    });
  };
}

/** Applies a middleware only to paths under a prefix. */
const under = (prefix: string, mw: (ctx: Context, next: Next) => unknown) => (ctx: Context, next: Next) =>
  ctx.path === prefix || ctx.path.startsWith(prefix + '/') ? mw(ctx, next) : next();

export function createApp(deps: AppDeps, extraRouters: Router[] = []): Koa {
  // One proxy hop (the platform router) appends the caller's address to X-Forwarded-For: trust only that
  // rightmost entry, so a caller cannot choose its own address (the sign-in and registration limits key
  // on it). Without a proxy in front (TRUST_PROXY=0) the caller would write that entry itself.
  const app = new Koa({ proxy: deps.config.trustProxy, maxIpsCount: 1 });
  app.use(requestContext(deps));
  app.use(httpMetrics);
  app.use(closeWhenStopping(deps));
  app.use(errorMiddleware(deps.log));
  // Probes, metrics and the API reference answer without /v1 credentials.
  for (const router of [healthRoutes(deps), metricsRoutes(deps), openApiRoutes(deps)]) app.use(router.routes());
  const admin = adminRoutes(deps);
  app.use(admin.routes());
  app.use(under('/v1', authenticate({ db: deps.store.db, collections: deps.collections, now: deps.now, resolveAccessToken: connectionTokenResolver(deps) })));
  app.use(under('/v1', refuseAuthoring));
  for (const router of [agentRoutes(deps), policyRoutes(deps), purchaseRoutes(deps), simulationRoutes(deps), webhookRoutes(deps), ...connectionRouters(deps), dashboardRoutes(deps), ...extraRouters]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
