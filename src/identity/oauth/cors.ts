// CORS for what browser-based MCP clients call directly: the discovery documents (RFC 8414, RFC 9728),
// client ID metadata documents this service serves, and the token, revocation and registration
// endpoints. Any origin: none of these use cookies or ambient credentials (the browser-bound sign-in
// pages and /mcp, which keeps its Origin check, get no CORS at all).
import type Router from '@koa/router';
import type { Context } from 'koa';

export function openCors(ctx: Context): void {
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
  ctx.set('Access-Control-Allow-Headers', 'Content-Type, Authorization, MCP-Protocol-Version');
  ctx.set('Access-Control-Expose-Headers', 'WWW-Authenticate, Retry-After');
  ctx.set('Access-Control-Max-Age', '600');
}

/** Answers the preflight (OPTIONS) of each path with 204 and the CORS headers. */
export function corsPreflight(router: Router, paths: string[]): void {
  router.options(paths, (ctx) => {
    openCors(ctx);
    ctx.status = 204;
  });
}
