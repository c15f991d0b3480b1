// The MCP endpoint at {base_url}/mcp (docs/reference/contract.md §1, §4.19): Streamable HTTP with the official SDK in
// stateless mode, one McpServer per request, bridged into Koa; and its OAuth protected resource
// metadata (RFC 9728). Per request:
//   1. Origin, when sent, must be this service's own origin (MCP transport security; DNS rebinding).
//   2. Bearer access token (RFC 6750) resolved like on /v1; 401 carries
//      `WWW-Authenticate: Bearer resource_metadata=..., scope=...` so a client can discover the
//      authorization server (RFC 9728 5.1) and the scopes to ask for (MCP 2025-11-25). The token's
//      audience must be exactly {base_url}/mcp (RFC 8707). Unlike /v1 (docs/reference/contract.md §5.3: 403
//      connection_unauthorized), every token that no longer works here, revoked connection and
//      disabled agent included, is 401 invalid_token: the MCP authorization specification and
//      RFC 6750 3.1 say so, and it is what makes a client sign in again by itself.
//   3. A tools/call for a tool the connection's scopes do not reach is a 403 insufficient_scope
//      challenge naming the scopes to ask for, those held and the missing one (RFC 6750 3.1), so a
//      client can ask the person for more.
//   4. A JSON-RPC batch under a protocol version without batches (2025-06-18 on) is 400 -32600 (batchRefused).
//   5. The JSON-RPC message goes to a fresh server + transport (serve.ts, loaded with the first call);
//      both are closed with the response. A tools/call the SDK would answer wrongly is answered before
//      it reaches the server.
import type Router from '@koa/router';
import { newRouter } from '../http/router.ts';
import type { Context } from 'koa';
import type { AppDeps } from '../app-deps.ts';
import { ApiError, forbidden } from '../http/errors.ts';
import { corsPreflight, openCors } from '../identity/oauth/cors.ts';
import { LIMITS, jsonBody } from '../http/body.ts';
import { invalidToken, resolveConnectionToken } from '../identity/connections/resolve-token.ts';
import { issuerOf, mcpResourceOf, protectedResourceMetadataUrl } from '../identity/oauth/issuer.ts';
import { SCOPES } from '../identity/oauth/scopes.ts';
import type { Scope } from '../identity/auth.ts';
import { TOOL_SCOPES } from './tool-scopes.ts';
import { bearerOf, REPEATED_AUTHORIZATION } from '../http/bearer.ts';

/** RFC 9728 3.3: `resource` is the URL the document's well-known address was built from. */
export function protectedResourceMetadata(deps: Pick<AppDeps, 'config'>, resource = mcpResourceOf(deps.config)) {
  return {
    resource,
    authorization_servers: [issuerOf(deps.config)],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'Spend control',
  };
}

/** RFC 6750 3 with RFC 9728 5.1's resource_metadata; `scope` is what to ask for (MCP 2025-11-25). */
function challenge(deps: AppDeps, error: string | null = null, scope = SCOPES.join(' ')): Record<string, string> {
  const err = error ? `error="${error}", ` : '';
  return { 'WWW-Authenticate': `Bearer ${err}scope="${scope}", resource_metadata="${protectedResourceMetadataUrl(deps.config)}"` };
}

function checkOrigin(ctx: Context, deps: AppDeps): void {
  const origin = ctx.get('origin');
  if (origin === '') return;
  if (origin !== new URL(deps.config.baseUrl).origin) {
    throw forbidden('origin_not_allowed', 'Requests to the MCP endpoint from this web origin are not allowed.');
  }
}

async function authenticateMcp(ctx: Context, deps: AppDeps) {
  const bearer = bearerOf(ctx.req);
  // Two lines are a credential we cannot read for sure: an invalid token (RFC 6750 3.1), so the client signs in again.
  if (bearer.kind === 'repeated') throw new ApiError(401, 'invalid_token', REPEATED_AUTHORIZATION, undefined, challenge(deps, 'invalid_token'));
  if (bearer.kind === 'none') throw new ApiError(401, 'unauthorized', 'Connect through OAuth and send Authorization: Bearer <access token>.', undefined, challenge(deps));
  const rejected = () => invalidToken(challenge(deps, 'invalid_token'));
  let resolved;
  try {
    resolved = await resolveConnectionToken({ db: deps.store.db, collections: deps.collections }, bearer.credential, deps.now());
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'invalid_token' || err.code === 'connection_unauthorized')) throw rejected();
    throw err;
  }
  // RFC 8707 / MCP authorization: a token for another audience is not valid here.
  if (resolved.resource !== mcpResourceOf(deps.config)) throw rejected();
  const organization = await deps.collections.organizations.findOne({ _id: resolved.principal.organizationId });
  if (!organization) throw rejected();
  if (organization.status === 'SUSPENDED') throw forbidden('organization_suspended', 'This organisation is suspended.');
  return { principal: resolved.principal, organization };
}

/**
 * JSON-RPC batches are in MCP 2025-03-26 only: 2025-06-18 removed them, and its Streamable HTTP
 * transport says a POST body is one message. Judged by the request's MCP-Protocol-Version (which
 * clients send from 2025-06-18 on; without it the transport specification says to assume 2025-03-26),
 * before anything runs or a scope is asked for (docs/reference/decisions.md).
 */
function batchRefused(ctx: Context): boolean {
  const version = ctx.get('mcp-protocol-version');
  return Array.isArray(ctx.state.body) && /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= '2025-06-18';
}

/** The scopes the JSON-RPC messages need that the connection lacks (batches included). */
function missingScopes(body: unknown, scopes: readonly string[]): Scope[] {
  const missing = new Set<Scope>();
  for (const message of Array.isArray(body) ? body : [body]) {
    if (message === null || typeof message !== 'object') continue;
    const m = message as { method?: unknown; params?: { name?: unknown } };
    if (m.method !== 'tools/call' || typeof m.params?.name !== 'string') continue;
    const needed = Object.hasOwn(TOOL_SCOPES, m.params.name) ? TOOL_SCOPES[m.params.name] : undefined;
    if (needed && !scopes.includes(needed)) missing.add(needed);
  }
  return SCOPES.filter((s) => missing.has(s));
}

export function mcpRoutes(deps: AppDeps): Router {
  const router = newRouter();

  corsPreflight(router, ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']);
  router.get('/.well-known/oauth-protected-resource/mcp', (ctx) => {
    openCors(ctx);
    ctx.body = protectedResourceMetadata(deps);
  });
  // The root document describes the resource {base_url} itself (RFC 9728 3.3), not /mcp. Tokens are
  // issued only for {base_url}/mcp (docs/reference/contract.md §5.2), and MCP clients read the path-suffixed document.
  router.get('/.well-known/oauth-protected-resource', (ctx) => {
    openCors(ctx);
    ctx.body = protectedResourceMetadata(deps, deps.config.baseUrl);
  });

  router.post('/mcp', async (ctx, next) => {
    checkOrigin(ctx, deps);
    const { principal, organization } = await authenticateMcp(ctx, deps);
    ctx.state.mcp = { principal, organization };
    return next();
  }, jsonBody(LIMITS.standard), async (ctx) => {
    const { principal, organization } = ctx.state.mcp as Awaited<ReturnType<typeof authenticateMcp>>;
    if (batchRefused(ctx)) {
      ctx.status = 400;
      ctx.body = { jsonrpc: '2.0', id: null, error: { code: -32600, message: `Invalid Request: MCP ${ctx.get('mcp-protocol-version')} has no JSON-RPC batches; send each message in its own POST.` } };
      return;
    }
    const lacking = missingScopes(ctx.state.body, principal.scopes);
    if (lacking.length > 0) {
      // The scopes held as well (MCP 2025-11-25, Scope Challenge Handling): clients ask for exactly
      // the challenge's, and a connection made for the missing one alone would lose the others.
      const wanted = SCOPES.filter((s) => principal.scopes.includes(s) || lacking.includes(s)).join(' ');
      throw new ApiError(403, 'insufficient_scope', `This connection lacks the ${lacking.join(' and ')} scope.`, undefined, challenge(deps, 'insufficient_scope', wanted));
    }
    // The SDK (and zod) load with the first MCP call, not with the process: most deployments never
    // connect an assistant, and the web process then keeps about 7 MB less heap.
    const { serveMcp } = await import('./serve.ts');
    await serveMcp(ctx, deps, principal, organization);
  });

  // Stateless: there is no server-initiated stream to GET and no session to DELETE.
  router.all('/mcp', (ctx) => {
    checkOrigin(ctx, deps);
    ctx.set('Allow', 'POST');
    ctx.status = 405;
    ctx.body = { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; use POST.' }, id: null };
  });

  return router;
}
