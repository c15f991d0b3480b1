// The TokenResolver of src/identity/auth.ts for `cmp_oat_` access tokens (docs/reference/contract.md §5.2, §5.3):
//   unknown, malformed or expired token            -> 401 invalid_token
//   revoked connection, agent not ENABLED (or gone) -> 403 connection_unauthorized (on /v1; /mcp
//                                                     answers 401 invalid_token, mcp/routes.ts)
//   otherwise                                       -> Principal CONNECTION with the token's scopes
// Revocation therefore takes effect on the very next call: nothing is cached.
import { lastUseIsStale, type Collections } from '../../store/collections.ts';
import type { StoreDb } from '../../store/store.ts';
import type { Principal, TokenResolver } from '../auth.ts';
import { ApiError, REFUSED_BEARER_CHALLENGE } from '../../http/errors.ts';
import { ACCESS_TOKEN_PREFIX, credentialDigest, hasShape } from '../oauth/credentials.ts';
import { oauthCollections } from '../oauth/documents.ts';
import { connectionsCollection } from './documents.ts';
import { grantableScopes } from '../oauth/scopes.ts';

export type ConnectionPrincipal = Extract<Principal, { kind: 'CONNECTION' }>;

export const invalidToken = (headers?: Record<string, string>) =>
  new ApiError(401, 'invalid_token', 'The access token is not valid or has expired.', undefined, headers ?? { 'WWW-Authenticate': REFUSED_BEARER_CHALLENGE });

/** 403 is the contract's (§5.3); the challenge says the token no longer enables access (RFC 6750 3: MUST be sent). */
export const connectionUnauthorized = () =>
  new ApiError(403, 'connection_unauthorized', 'This connection has been revoked or its agent is no longer enabled.', undefined, {
    'WWW-Authenticate': REFUSED_BEARER_CHALLENGE,
  });

export interface ResolvedToken {
  principal: ConnectionPrincipal;
  /** The token's audience (RFC 8707 resource). */
  resource: string;
}

export async function resolveConnectionToken(deps: { db: StoreDb; collections: Collections }, token: string, now: Date): Promise<ResolvedToken> {
  if (!hasShape(token, ACCESS_TOKEN_PREFIX)) throw invalidToken();
  const access = await oauthCollections(deps.db).accessTokens.findOne({ _id: credentialDigest(token) });
  if (!access || access.expiresAt.getTime() <= now.getTime()) throw invalidToken();
  const connection = await connectionsCollection(deps.db).findOne({ _id: access.connectionId });
  if (!connection || connection.revokedAt !== null) throw connectionUnauthorized();
  const agent = await deps.collections.agents.findOne({ _id: connection.agentId, organizationId: connection.organizationId });
  if (!agent || agent.status !== 'ENABLED') throw connectionUnauthorized();
  // Roles are read on every call, as the dashboard reads them: a person no longer an approver no longer requests purchases through it.
  const grantor = await deps.collections.people.findOne({ _id: connection.personId, organizationId: connection.organizationId });
  if (lastUseIsStale(connection.lastUsedAt, now)) await connectionsCollection(deps.db).updateOne({ _id: connection._id }, { $set: { lastUsedAt: now } });
  return {
    resource: access.resource,
    principal: {
      kind: 'CONNECTION',
      organizationId: connection.organizationId,
      connectionId: connection._id,
      agentId: connection.agentId,
      // A token never carries more than its connection was granted, nor more than its grantor may grant now.
      scopes: grantableScopes(grantor ?? { roles: [] }, access.scopes.filter((s) => connection.scopes.includes(s))),
      application: connection.applicationName,
      grantedBy: { name: connection.grantedBy.name },
      personId: connection.personId,
    },
  };
}

/** The hook for `authenticate({ ..., resolveAccessToken })` in src/http/app.ts. */
export function connectionTokenResolver(deps: { store: { db: StoreDb }; collections: Collections }): TokenResolver {
  return async (token, now) => (await resolveConnectionToken({ db: deps.store.db, collections: deps.collections }, token, now)).principal;
}
