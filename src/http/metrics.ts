// Request metrics (mounted first in the app) and GET /metrics, guarded by its own bearer token
// METRICS_TOKEN; without one the endpoint does not exist (404), so nothing leaks by default.
import type Router from '@koa/router';
import { newRouter } from './router.ts';
import type { Context, Next } from 'koa';
import type { AppDeps } from '../app-deps.ts';
import { notFound, unauthorized } from './errors.ts';
import { httpRequestDone, registry, renderMetrics } from '../metrics/metrics.ts';
import { METRICS_CHALLENGE, metricsBearer } from '../metrics/token.ts';

export async function httpMetrics(ctx: Context, next: Next): Promise<void> {
  const receivedAt = performance.now();
  ctx.state.receivedAt = receivedAt;
  try {
    await next();
  } finally {
    // The route template keeps the label set small; anything no router matched is one label.
    httpRequestDone(ctx.method, routeTemplate(ctx), ctx.status, (performance.now() - receivedAt) / 1000);
  }
}

type RoutedContext = Context & { _matchedRoute?: string | RegExp; matched?: { path: string | RegExp; methods: string[] }[] };

/**
 * The template of the route that took the request, or `unmatched`. @koa/router leaves in _matchedRoute
 * the path of the last of its layers that ran: when a router's own middleware ends the request (the
 * operator API's token check, `router.use` under `/admin`), that is its prefix pattern, `/admin(?:\/|$)`,
 * not a route; the route the request was for is then the last matched layer that serves its method.
 */
function routeTemplate(ctx: RoutedContext): string {
  const matched = ctx.matched ?? [];
  const last = ctx._matchedRoute;
  if (last !== undefined && matched.some((layer) => layer.path === last && layer.methods.length > 0)) return String(last);
  const route = matched.findLast((layer) => layer.methods.includes(ctx.method))?.path;
  return route === undefined ? 'unmatched' : String(route);
}

export function metricsRoutes(deps: AppDeps): Router {
  const router = newRouter();
  const allowed = metricsBearer(deps.config.metricsToken);
  router.get('/metrics', async (ctx) => {
    if (allowed === null) throw notFound();
    const refusal = allowed(ctx.req);
    if (refusal !== null) throw unauthorized('unauthorized', refusal, METRICS_CHALLENGE);
    ctx.type = registry.contentType;
    ctx.body = await renderMetrics();
  });
  return router;
}
