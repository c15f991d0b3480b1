// Every router of the service: paths are matched case-sensitively. @koa/router matches a route
// without regard to case by default, but the middleware a router mounts under a prefix (router.use,
// the operator API's token check) with regard to it: /ADMIN/manifests reached the route and skipped
// the check. With both case-sensitive, /ADMIN/... matches nothing and is a 404.
import Router, { type RouterOptions } from '@koa/router';
import type { Context, Middleware, Next } from 'koa';

export const newRouter = (options: Omit<RouterOptions, 'sensitive'> = {}): Router => new Router({ ...options, sensitive: true });

/** Applies a middleware only to paths under a prefix. */
export const under =
  (prefix: string, mw: (ctx: Context, next: Next) => unknown): Middleware =>
  (ctx, next) =>
    ctx.path === prefix || ctx.path.startsWith(prefix + '/') ? mw(ctx, next) : next();
