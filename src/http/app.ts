// createApp(deps, capabilities, surfaces): the Koa application. No I/O happens here. The platform's own
// routes (probes, metrics, the API reference) and middleware are here; everything else comes from the
// capabilities' gauges and HTTP surfaces that src/service-app.ts hands in.
import Koa from 'koa';
import type { Context, Next } from 'koa';
import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../app-deps.ts';
import type { Capability, HttpSurface } from '../capability.ts';
import { withRequestId } from '../log.ts';
import { errorMiddleware } from './error-middleware.ts';
import { closeWhenStopping, healthRoutes } from './health.ts';
import { openApiRoutes } from './openapi-route.ts';
import { httpMetrics, metricsRoutes } from './metrics.ts';

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

/**
 * Served at an https BASE_URL: browsers then never reach the dashboard, the OAuth pages or the API over
 * plain http, where a network attacker could strip TLS from the first request (RFC 6797). A year, this
 * host only: the operator's other subdomains are not ours to pin.
 */
async function strictTransportSecurity(ctx: Context, next: Next): Promise<void> {
  ctx.set('Strict-Transport-Security', 'max-age=31536000');
  await next();
}

export function createApp(deps: AppDeps, capabilities: readonly Capability[], surfaces: readonly HttpSurface[]): Koa {
  // One proxy hop (the platform router) appends the caller's address to X-Forwarded-For: trust only that
  // rightmost entry, so a caller cannot choose its own address (the sign-in and registration limits key
  // on it). Without a proxy in front (TRUST_PROXY=0) the caller would write that entry itself.
  const app = new Koa({ proxy: deps.config.trustProxy, maxIpsCount: 1 });
  app.use(requestContext(deps));
  if (deps.config.baseUrl.startsWith('https:')) app.use(strictTransportSecurity);
  app.use(httpMetrics);
  app.use(closeWhenStopping(deps));
  app.use(errorMiddleware(deps));
  // Probes, metrics and the API reference answer without /v1 credentials.
  for (const router of [healthRoutes(deps), metricsRoutes(deps), openApiRoutes(deps)]) app.use(router.routes());
  for (const capability of capabilities) capability.metrics?.(deps);
  // What the surfaces contribute, in the order of their list (src/service-app.ts): first every
  // surface's middleware (authentication on /v1 among them), then their routers.
  for (const surface of surfaces) for (const mw of surface.middleware?.(deps) ?? []) app.use(mw);
  for (const surface of surfaces) {
    for (const router of surface.routes?.(deps) ?? []) {
      app.use(router.routes());
      app.use(router.allowedMethods());
    }
  }
  return app;
}
