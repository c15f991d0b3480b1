// Authentication and the credential matrix of docs/reference/contract.md §5.3. `authenticate` turns the bearer credential
// into a Principal (or a 401/403); the guards below say which principals an operation accepts.
import type { Context, Next } from 'koa';
import { ApiError, BEARER_CHALLENGE, forbidden, REFUSED_BEARER_CHALLENGE, unauthorized } from '../http/errors.ts';
import { classifyKey, hashesMatch } from './credentials/api-keys.ts';
import { lastUseIsStale, type ApiKeyDoc, type Collections } from '../store/collections.ts';
import type { StoreDb } from '../store/store.ts';
import { configView, type ConfigView } from '../cache/config-cache.ts';
import { bearerOf, REPEATED_AUTHORIZATION, type Bearer } from '../http/bearer.ts';

export type Scope = 'purchase:check' | 'purchase:read' | 'purchase:request';

export type Principal =
  | { kind: 'API_KEY'; organizationId: string; apiKeyId: string; prefix: string; agentId: string | null }
  | {
      kind: 'CONNECTION';
      organizationId: string;
      connectionId: string;
      agentId: string;
      scopes: Scope[];
      application: string;
      grantedBy: { name: string };
      /** The person who authorised the connection: a purchase it submits counts as theirs (no self-approval). */
      personId: string;
    };

/** Resolves `cmp_oat_` access tokens; supplied by the OAuth capability. */
export type TokenResolver = (token: string, now: Date) => Promise<Principal>;

export interface AuthDeps {
  db: StoreDb;
  collections: Collections;
  now: () => Date;
  resolveAccessToken?: TokenResolver;
}

/** The lastUsedAt this process last wrote, per cached key document (gone with the document). */
const lastUseWritten = new WeakMap<ApiKeyDoc, Date>();

const refused = (code: string, message: string) => unauthorized(code, message, REFUSED_BEARER_CHALLENGE);
const noCredential = () => unauthorized('unauthorized', 'Send a credential as Authorization: Bearer <credential>.', BEARER_CHALLENGE);
const invalidKey = () => refused('invalid_api_key', 'The API key is not recognised.');
/** Also refused by a submission whose key was revoked, or organisation suspended, after it was authenticated (src/purchases/submit.ts). */
export const apiKeyRevoked = () => refused('api_key_revoked', 'This API key has been revoked.');
export const organizationSuspended = () => forbidden('organization_suspended', 'This organisation is suspended.');

export async function principalFor(bearer: Bearer, deps: AuthDeps, view: ConfigView): Promise<Principal> {
  if (bearer.kind === 'repeated') throw refused('unauthorized', REPEATED_AUTHORIZATION);
  if (bearer.kind === 'none') throw noCredential();
  const credential = bearer.credential;
  const now = deps.now();

  if (credential.startsWith('cmp_oat_')) {
    if (!deps.resolveAccessToken) throw refused('invalid_token', 'The access token is not valid.');
    return deps.resolveAccessToken(credential, now);
  }
  // An OAuth refresh token or authorization code is an OAuth credential, just not a bearer one.
  if (credential.startsWith('cmp_ort_') || credential.startsWith('cmp_oac_')) {
    throw refused('invalid_token', 'Only an access token (cmp_oat_) is a bearer credential; exchange this one at the token endpoint.');
  }
  const shape = classifyKey(credential);
  if (shape.kind === 'other-environment') {
    throw refused('wrong_environment', 'This key belongs to a different environment.');
  }
  if (shape.kind === 'unrecognised') throw invalidKey();

  const key = await view.get(`api-key:${shape.prefix}`, () => deps.collections.apiKeys.findOne({ prefix: shape.prefix }));
  if (!key || !hashesMatch(credential, key.hash)) throw invalidKey();
  if (key.revokedAt) throw apiKeyRevoked();
  if (key.expiresAt && key.expiresAt.getTime() <= now.getTime()) {
    throw refused('api_key_expired', 'This API key has expired.');
  }
  // Last use is bookkeeping, not configuration: written past the cache's stamp, so it invalidates nothing,
  // and the cached key keeps the lastUsedAt it was loaded with: what this process wrote since is remembered here.
  if (lastUseIsStale(lastUseWritten.get(key) ?? key.lastUsedAt, now)) {
    await deps.db.collection<ApiKeyDoc>('api_keys').updateOne({ _id: key._id }, { $set: { lastUsedAt: now } });
    lastUseWritten.set(key, now);
  }
  return { kind: 'API_KEY', organizationId: key.organizationId, apiKeyId: key._id, prefix: key.prefix, agentId: key.agentId };
}

/** Koa middleware: authenticates, then refuses suspended organisations (403 organization_suspended). */
export function authenticate(deps: AuthDeps) {
  return async (ctx: Context, next: Next) => {
    const view = await configView(deps.db);
    const principal = await principalFor(bearerOf(ctx.req), deps, view);
    const org = await view.get(`organization:${principal.organizationId}`, () => deps.collections.organizations.findOne({ _id: principal.organizationId }));
    if (!org) throw invalidKey();
    if (org.status === 'SUSPENDED') throw organizationSuspended();
    ctx.state.principal = principal;
    ctx.state.organization = org;
    return next();
  };
}

/** The request's authenticated caller; a route reached without one (a mounting mistake) is refused, never a 500. */
export function principalOf(ctx: Context): Principal {
  const principal = ctx.state.principal as Principal | undefined;
  if (principal === undefined) throw noCredential();
  return principal;
}

/** Policies, versions, agents, webhooks, draft and version simulations (docs/reference/contract.md §5.3 row 3). */
export function requireOrganizationKey(ctx: Context, next: Next) {
  const p = principalOf(ctx);
  if (p.kind === 'CONNECTION') throw forbidden('oauth_not_permitted', 'Connections cannot call this operation.');
  if (p.agentId !== null) {
    throw forbidden('api_key_not_organization_scoped', 'This operation needs an organization-scoped API key.');
  }
  return next();
}

/** Submit and read purchases: an agent-bound key, or a connection holding `scope`. */
export function requireAgentIdentity(scope: Scope) {
  return (ctx: Context, next: Next) => {
    const p = principalOf(ctx);
    if (p.kind === 'CONNECTION') {
      if (!p.scopes.includes(scope)) throw insufficientScope(scope);
      return next();
    }
    if (p.agentId === null) throw forbidden('api_key_not_bound_to_agent', 'This operation needs an API key bound to an agent.');
    return next();
  };
}

/** Current-policies simulation: any API key, or a connection with `purchase:check`. */
export function requireSimulationAccess(ctx: Context, next: Next) {
  const p = principalOf(ctx);
  if (p.kind === 'CONNECTION' && !p.scopes.includes('purchase:check')) throw insufficientScope('purchase:check');
  return next();
}

export const insufficientScope = (scope: Scope) =>
  new ApiError(403, 'insufficient_scope', `This connection lacks the ${scope} scope.`, undefined, {
    'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${scope}"`,
  });

/** docs/reference/contract.md §1 rule 2: no credential of any kind may author policy through /v1. */
export function refusePolicyAuthoring(_ctx: Context, _next: Next): never {
  throw forbidden('api_key_not_permitted', 'Policies are authored outside the API; no credential may change them here.');
}
