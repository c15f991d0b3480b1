// Request metrics (mounted first in the app) and GET /metrics, guarded by its own bearer token
// METRICS_TOKEN; without one the endpoint does not exist (404), so nothing leaks by default.
import type Router from '@koa/router';
import { newRouter } from './router.ts';
import type { Context, Next } from 'koa';
import type { AppDeps } from '../app-deps.ts';
import { ApiError, notFound } from './errors.ts';
import { httpRequestDone, registry, renderMetrics } from '../metrics/metrics.ts';
import { METRICS_CHALLENGE, metricsBearer } from '../metrics/token.ts';

export async function httpMetrics(ctx: Context, next: Next): Promise<void> {
  const receivedAt = performance.now();
  ctx.state.receivedAt = receivedAt;
  try {
    await next();
  } finally {
    // The route template keeps the label set small; anything no router matched is one label.
    const route = (ctx as Context & { _matchedRoute?: string | RegExp })._matchedRoute;
    httpRequestDone(ctx.method, route ? String(route) : 'unmatched', ctx.status, (performance.now() - receivedAt) / 1000);
  }
}

export function metricsRoutes(deps: AppDeps): Router {
  const router = newRouter();
  const allowed = metricsBearer(deps.config.metricsToken);
  router.get('/metrics', async (ctx) => {
    if (allowed === null) throw notFound();
    const refusal = allowed(ctx.req);
    if (refusal !== null) throw new ApiError(401, 'unauthorized', refusal, undefined, { 'WWW-Authenticate': METRICS_CHALLENGE });
    ctx.type = registry.contentType;
    ctx.body = await renderMetrics();
  });
  return router;
}
