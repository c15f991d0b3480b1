// The token endpoint (RFC 6749 3.2, 4.1.3, 6; RFC 7636 4.6; RFC 8707 2.2; docs/reference/contract.md §5.2) and token
// revocation (RFC 7009). Public clients only (token_endpoint_auth_method "none"): the client proves
// itself with the PKCE verifier, and refresh tokens are bound to the client_id they were issued to.
//
// Refresh tokens rotate on every use. A rotated (consumed) refresh token presented again means two
// parties hold it; the whole connection is revoked and `security.connection_token_reuse_detected`
// is recorded (docs/reference/contract.md §5.2; RFC 9700 4.14.2). A reused authorization code is treated the same way
// (RFC 6749 4.1.2: the server SHOULD revoke what was issued from it), but only when the request proves it comes
// from the client the code was issued to (client_id, redirect_uri and the PKCE verifier all match).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AppDeps } from '../../app-deps.ts';
import type { Scope } from '../auth.ts';
import { VersionConflict } from '../../http/errors.ts';
import { runCommand } from '../../commands/run-command.ts';
import type { StoreDb, StoreSession } from '../../store/store.ts';
import { connectionsCollection, type ConnectionDoc } from '../connections/documents.ts';
import { revokeConnectionIn } from '../connections/revoke.ts';
import {
  ACCESS_TOKEN_PREFIX,
  ACCESS_TOKEN_TTL_MS,
  CODE_PREFIX,
  REFRESH_TOKEN_PREFIX,
  REFRESH_TOKEN_TTL_MS,
  credentialDigest,
  hasShape,
  newCredential,
} from './credentials.ts';
import { oauthCollections } from './documents.ts';
import type { FormResult } from './form.ts';
import { mcpResourceOf } from './issuer.ts';
import { canonicalClientId, registrationIdOf } from './registration.ts';
import { grantableScopes, parseScopes } from './scopes.ts';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export type TokenOutcome =
  | { ok: true; body: TokenResponse }
  | { ok: false; status: 400; error: string; description: string };

const failure = (error: string, description: string): TokenOutcome => ({ ok: false, status: 400, error, description });
const invalidGrant = (description: string) => failure('invalid_grant', description);

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/; // RFC 7636 4.1

/** RFC 7636 4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge, compared in constant time. */
export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier)) return false;
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

/**
 * A new access token and refresh token. Their scopes differ after a refresh that narrows: the access
 * token gets the narrowed ones, and `scope` describes it (RFC 6749 5.1); the refresh token keeps
 * those of the refresh token presented (RFC 6749 6).
 */
async function issueTokens(db: StoreDb, session: StoreSession, connection: ConnectionDoc, clientId: string, scopes: { access: Scope[]; refresh: Scope[] }, resource: string, now: Date): Promise<TokenResponse> {
  const o = oauthCollections(db);
  const access = newCredential(ACCESS_TOKEN_PREFIX);
  const refresh = newCredential(REFRESH_TOKEN_PREFIX);
  const common = { connectionId: connection._id, clientId, resource, createdAt: now };
  await o.accessTokens.insertOne({ _id: credentialDigest(access), ...common, scopes: scopes.access, expiresAt: new Date(now.getTime() + ACCESS_TOKEN_TTL_MS) }, { session });
  await o.refreshTokens.insertOne({ _id: credentialDigest(refresh), ...common, scopes: scopes.refresh, expiresAt: new Date(now.getTime() + REFRESH_TOKEN_TTL_MS), consumedAt: null }, { session });
  return { access_token: access, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_MS / 1000, refresh_token: refresh, scope: scopes.access.join(' ') };
}

/**
 * Whether a stored credential was issued to this (canonical) client_id. The stored one is made
 * canonical too: credentials issued before client_ids were stored in their registered spelling may
 * hold another spelling of the same registration.
 */
const issuedTo = (deps: AppDeps, stored: string, clientId: string) => canonicalClientId(deps.config, stored) === clientId;

/**
 * The connection tokens may be issued for, or why not. Tokens for an agent that is not ENABLED would
 * be refused on their first use; refusing the grant instead sends the client back to the person
 * (who can choose an enabled agent). The refresh token is not consumed, so it works again once the
 * agent is re-enabled.
 */
async function usableConnection(deps: AppDeps, session: StoreSession, connectionId: string): Promise<ConnectionDoc | string> {
  const connection = await connectionsCollection(deps.store.db).findOne({ _id: connectionId }, { session });
  if (!connection || connection.revokedAt !== null) return 'the connection has been revoked';
  const agent = await deps.collections.agents.findOne({ _id: connection.agentId, organizationId: connection.organizationId }, { session });
  if (!agent || agent.status !== 'ENABLED') return 'the agent of this connection is not enabled';
  // Revoking a registration revokes its connections (revokeRegisteredClient); this refuses any its
  // query missed, such as one stored with another spelling of the client_id.
  const registrationId = registrationIdOf(deps.config, connection.clientId);
  if (registrationId !== null) {
    const client = await oauthCollections(deps.store.db).clients.findOne({ _id: registrationId }, { session });
    if (!client || client.revokedAt !== null) return 'the registration of this application has been revoked';
  }
  return connection;
}

/** The token endpoint: dispatches on grant_type. */
export async function tokenRequest(deps: AppDeps, form: FormResult): Promise<TokenOutcome> {
  if (!form.ok) return failure('invalid_request', form.detail);
  const sent = form.get('client_id');
  if (!sent) return failure('invalid_request', 'client_id is required (public clients identify themselves with it)');
  const clientId = canonicalClientId(deps.config, sent);
  // RFC 6749 5.2's default 400: a 401 must name an HTTP authentication scheme to use instead
  // (RFC 9110 15.5.2), and public clients have none.
  if (form.get('client_secret') !== undefined) return failure('invalid_client', 'client secrets are not supported; use PKCE');
  switch (form.get('grant_type')) {
    case 'authorization_code':
      return exchangeCode(deps, form, clientId);
    case 'refresh_token':
      return refresh(deps, form, clientId);
    case undefined:
      return failure('invalid_request', 'grant_type is required');
    default:
      return failure('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
  }
}

type Form = Extract<FormResult, { ok: true }>;

async function exchangeCode(deps: AppDeps, form: Form, clientId: string): Promise<TokenOutcome> {
  const code = form.get('code');
  const redirectUri = form.get('redirect_uri');
  const verifier = form.get('code_verifier');
  const resource = form.get('resource');
  if (!code) return failure('invalid_request', 'code is required');
  if (!redirectUri) return failure('invalid_request', 'redirect_uri is required');
  if (!verifier) return failure('invalid_request', 'code_verifier is required (PKCE)');
  // RFC 8707 2.2 and docs/reference/contract.md §5.2: the resource must be named again, and be the MCP endpoint.
  if (resource !== mcpResourceOf(deps.config)) return failure('invalid_target', `resource must be ${mcpResourceOf(deps.config)}`);
  if (!hasShape(code, CODE_PREFIX)) return invalidGrant('the authorization code is not valid');
  const digest = credentialDigest(code);
  const now = deps.now();

  return runCommand(deps.store, async (session): Promise<TokenOutcome> => {
    const o = oauthCollections(deps.store.db);
    const found = await o.codes.findOne({ _id: digest }, { session });
    if (!found) return invalidGrant('the authorization code is not valid');
    if (!issuedTo(deps, found.clientId, clientId)) return invalidGrant('the authorization code was issued to another client');
    // RFC 6749 4.1.3: identical to the redirect_uri of the authorization request.
    if (found.redirectUri !== redirectUri) return invalidGrant('redirect_uri does not match the authorization request');
    if (found.resource !== resource) return failure('invalid_target', 'resource does not match the authorization request');
    if (!verifierMatches(verifier, found.codeChallenge)) return invalidGrant('code_verifier does not match the code_challenge');
    // Checked only now: a used code revokes its connection when its own client presents it again, with
    // the verifier. Anyone else who saw the code (a log, a Referer) must not be able to end the connection.
    if (found.usedAt !== null) {
      await revokeConnectionIn(deps.store.db, session, found.connectionId, 'TOKEN_REUSE', now, { credential: 'AUTHORIZATION_CODE' });
      return invalidGrant('the authorization code was already used; the connection has been revoked');
    }
    if (found.expiresAt.getTime() <= now.getTime()) return invalidGrant('the authorization code has expired');
    // Refused before it is used up: a client that tries again (its agent was disabled after consent, say)
    // must not look like a code replayed by someone else, which revokes the connection as token reuse.
    const connection = await usableConnection(deps, session, found.connectionId);
    if (typeof connection === 'string') return invalidGrant(connection);
    const used = await o.codes.updateOne({ _id: digest, usedAt: null }, { $set: { usedAt: now } }, { session });
    if (used.matchedCount !== 1) throw new VersionConflict(`authorization code ${digest.slice(0, 8)}`);
    return { ok: true, body: await issueTokens(deps.store.db, session, connection, clientId, { access: found.scopes, refresh: found.scopes }, found.resource, now) };
  });
}

async function refresh(deps: AppDeps, form: Form, clientId: string): Promise<TokenOutcome> {
  const token = form.get('refresh_token');
  if (!token) return failure('invalid_request', 'refresh_token is required');
  const resource = form.get('resource');
  if (resource !== undefined && resource !== mcpResourceOf(deps.config)) return failure('invalid_target', `resource must be ${mcpResourceOf(deps.config)}`);
  const requestedScope = form.get('scope');
  let narrowed: Scope[] | null = null;
  if (requestedScope !== undefined) {
    const parsed = parseScopes(requestedScope);
    if (!parsed.ok) return failure('invalid_scope', 'unknown scope requested');
    narrowed = parsed.scopes;
  }
  if (!hasShape(token, REFRESH_TOKEN_PREFIX)) return invalidGrant('the refresh token is not valid');
  const digest = credentialDigest(token);
  const now = deps.now();

  return runCommand(deps.store, async (session): Promise<TokenOutcome> => {
    const o = oauthCollections(deps.store.db);
    const found = await o.refreshTokens.findOne({ _id: digest }, { session });
    if (!found) return invalidGrant('the refresh token is not valid');
    if (!issuedTo(deps, found.clientId, clientId)) return invalidGrant('the refresh token was issued to another client');
    if (found.consumedAt !== null) {
      // Reuse: revoke the whole connection (docs/reference/contract.md §5.2), committed with this transaction.
      await revokeConnectionIn(deps.store.db, session, found.connectionId, 'TOKEN_REUSE', now, { credential: 'REFRESH_TOKEN' });
      return invalidGrant('the refresh token was already used; the connection has been revoked');
    }
    if (found.expiresAt.getTime() <= now.getTime()) return invalidGrant('the refresh token has expired');
    const connection = await usableConnection(deps, session, found.connectionId);
    if (typeof connection === 'string') return invalidGrant(connection);
    // RFC 6749 6: a refresh may narrow the scopes, never widen them.
    if (narrowed && !narrowed.every((s) => found.scopes.includes(s))) return failure('invalid_scope', 'a refresh cannot add scopes');
    // RFC 6749 6: the new refresh token has exactly the scopes of the one presented; only the access token is narrowed,
    // also to what the person who granted it may grant now (a call would be held to that anyway: resolve-token.ts),
    // so that `scope` says what the token can do. A person made approver again gets purchase:request back.
    const grantor = await deps.collections.people.findOne({ _id: connection.personId, organizationId: connection.organizationId }, { session });
    const access = grantableScopes(grantor ?? { roles: [] }, narrowed ?? found.scopes);
    // Nothing left (RFC 6749 3.3 has no empty scope): refused before the token is used up, as for a disabled agent;
    // invalid_scope when the client narrowed to what cannot be granted now (RFC 6749 5.2).
    if (access.length === 0) {
      const why = 'the person who approved this connection may no longer grant purchase:request';
      return narrowed ? failure('invalid_scope', why) : invalidGrant(why);
    }
    const consumed = await o.refreshTokens.updateOne({ _id: digest, consumedAt: null }, { $set: { consumedAt: now } }, { session });
    // Another request rotated it at the same moment: retry, and the retry sees the reuse.
    if (consumed.matchedCount !== 1) throw new VersionConflict(`refresh token ${digest.slice(0, 8)}`);
    return { ok: true, body: await issueTokens(deps.store.db, session, connection, clientId, { access, refresh: found.scopes }, found.resource, now) };
  });
}

/**
 * RFC 7009: 200 for a well-formed request naming a token this service does not know (2.2). A known
 * token issued to another client is refused, as 2.1 requires, with 400 `invalid_request`
 * (docs/reference/decisions.md): only its holder can present it, so the answer tells nothing a guesser
 * could use. Revoking an access token ends that token; revoking a refresh token ends the grant, that
 * is the connection (RFC 7009 2.1), with `connection.revoked`.
 */
export async function revocationRequest(deps: AppDeps, form: FormResult): Promise<{ ok: true } | { ok: false; status: 400; error: string; description: string }> {
  if (!form.ok) return { ok: false, status: 400, error: 'invalid_request', description: form.detail };
  const token = form.get('token');
  const sent = form.get('client_id');
  if (!token) return { ok: false, status: 400, error: 'invalid_request', description: 'token is required' };
  if (!sent) return { ok: false, status: 400, error: 'invalid_request', description: 'client_id is required' };
  const clientId = canonicalClientId(deps.config, sent);
  const o = oauthCollections(deps.store.db);
  const digest = credentialDigest(token);
  const otherClients = { ok: false, status: 400, error: 'invalid_request', description: 'the token was issued to another client' } as const;
  if (hasShape(token, ACCESS_TOKEN_PREFIX)) {
    const found = await o.accessTokens.findOne({ _id: digest });
    if (found && !issuedTo(deps, found.clientId, clientId)) return otherClients;
    if (found) await o.accessTokens.deleteOne({ _id: digest });
  } else if (hasShape(token, REFRESH_TOKEN_PREFIX)) {
    const found = await o.refreshTokens.findOne({ _id: digest });
    if (found && !issuedTo(deps, found.clientId, clientId)) return otherClients;
    if (found) await runCommand(deps.store, (session) => revokeConnectionIn(deps.store.db, session, found.connectionId, 'CLIENT', deps.now()));
  }
  return { ok: true };
}
