// The authorization endpoint's request checks (RFC 6749 4.1.1, RFC 7636, RFC 8707, docs/reference/contract.md §5.2) and
// the command that turns a person's approval into a connection and a code.
//
// Order matters (RFC 6749 4.1.2.1): until client_id and redirect_uri are known to belong together,
// nothing may be sent to the redirect_uri, so those failures are shown as a page. Every later
// failure is sent back to the client as `error` with `state` and `iss` (RFC 9207): at once to a
// loopback or app URI, through a link on a page to an https one (routes.ts, RFC 9700 4.11.2).
import type { Scope } from '../auth.ts';
import type { Collections } from '../../store/collections.ts';
import type { StoreDb, StoreSession } from '../../store/store.ts';
import { newId } from '../../ids.ts';
import { recordEvent } from '../../events/outbox.ts';
import { connectionsCollection, type ConnectionDoc } from '../connections/documents.ts';
import { fetchClientMetadata, type ClientMetadata, type FetchOptions } from './client-metadata.ts';
import { CODE_PREFIX, CODE_TTL_MS, credentialDigest, newCredential } from './credentials.ts';
import { oauthCollections, type AuthorizationRequestDoc } from './documents.ts';
import { findRegisteredRedirect } from './redirect-uri.ts';
import { SCOPES, parseScopes } from './scopes.ts';
import type { FormResult } from './form.ts';

export const MAX_STATE_LENGTH = 2048;
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/; // base64url(SHA-256(verifier)), RFC 7636 4.2

export interface ValidRequest {
  client: ClientMetadata;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  resource: string;
  scopes: Scope[];
}

export type AuthorizationCheck =
  | { kind: 'page'; heading: string; message: string }
  | { kind: 'redirect'; redirectUri: string; state: string | null; error: string; description: string }
  | { kind: 'ok'; request: ValidRequest };

export async function checkAuthorizationRequest(
  params: FormResult,
  expectedResource: string,
  fetchOptions: FetchOptions,
  fetchMetadata: typeof fetchClientMetadata = fetchClientMetadata,
): Promise<AuthorizationCheck> {
  if (!params.ok) return { kind: 'page', heading: 'This connection request is not valid', message: `The application sent a malformed request: ${params.detail}.` };
  const clientId = params.get('client_id');
  const requested = params.get('redirect_uri');
  if (!clientId) return { kind: 'page', heading: 'This connection request is not valid', message: 'The application did not identify itself (client_id is missing).' };
  // 1. The client: its metadata document, fetched under the SSRF rules.
  const fetched = await fetchMetadata(clientId, fetchOptions);
  if (!fetched.ok) return { kind: 'page', heading: 'This application could not be verified', message: `Its client_id ${clientId} was refused: ${fetched.reason}.` };
  const client = fetched.metadata;
  // 2. The redirect URI must be one the document registers (loopback: any port, RFC 8252 7.3).
  if (!requested) return { kind: 'page', heading: 'This connection request is not valid', message: 'The application did not say where to send you back (redirect_uri is missing).' };
  if (!findRegisteredRedirect(requested, client.redirectUris)) {
    return { kind: 'page', heading: 'This connection request is not valid', message: `The address ${requested} is not one that ${client.clientName} registered, so you will not be sent there.` };
  }
  const state = params.get('state') ?? null;
  const fail = (error: string, description: string): AuthorizationCheck => ({ kind: 'redirect', redirectUri: requested, state, error, description });
  if (state !== null && state.length > MAX_STATE_LENGTH) return fail('invalid_request', `state is longer than ${MAX_STATE_LENGTH} characters`);
  // 3. Authorization code only.
  const responseType = params.get('response_type');
  if (responseType === undefined) return fail('invalid_request', 'response_type is required (code)');
  if (responseType !== 'code') return fail('unsupported_response_type', 'only response_type=code is supported');
  // 4. PKCE, S256 only (docs/reference/contract.md §5.2; RFC 7636 4.3).
  const method = params.get('code_challenge_method');
  const challenge = params.get('code_challenge');
  if (!challenge) return fail('invalid_request', 'code_challenge is required (PKCE)');
  if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
  if (!CODE_CHALLENGE.test(challenge)) return fail('invalid_request', 'code_challenge must be the base64url SHA-256 of the verifier (43 characters)');
  // 5. The resource must be exactly the MCP endpoint (RFC 8707 2; docs/reference/contract.md §5.2).
  const resource = params.get('resource');
  if (resource !== expectedResource) return fail('invalid_target', `resource must be ${expectedResource}`);
  // 6. Scopes: unknown ones refuse the request; none asked means those the client declares, or all.
  const rawScope = params.get('scope') ?? client.scope ?? SCOPES.join(' ');
  const scopes = parseScopes(rawScope);
  if (!scopes.ok) return fail('invalid_scope', scopes.unknown.length > 0 ? `unknown scope ${scopes.unknown.join(', ')}` : 'no scope requested');
  return { kind: 'ok', request: { client, redirectUri: requested, state, codeChallenge: challenge, resource, scopes: scopes.scopes } };
}

/**
 * RFC 6749 4.1.2.1 and 5.2: error_description holds only %x20-21 / %x23-5B / %x5D-7E. A description
 * naming what the request sent (an unknown scope) could hold anything else; it becomes `?`.
 */
export const errorDescription = (text: string) => text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?');

/** The redirect back to the client, with `iss` always (RFC 9207 2) and `state` when sent. */
export function authorizationResponseUrl(redirectUri: string, params: Record<string, string | null>, issuer: string): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.append(name, value);
  url.searchParams.append('iss', issuer);
  return url.href;
}

export interface ApproveInput {
  request: AuthorizationRequestDoc;
  person: { _id: string; name: string; organizationId: string };
  agent: { _id: string; name: string };
  /** What the person grants: the request's scopes that their roles allow (grantableScopes). */
  scopes: Scope[];
  now: Date;
}

/**
 * The person approved: in one transaction, consume the authorization request (single use), create
 * the connection, record `connection.created` and issue a single-use code bound to everything the
 * token request must repeat. Returns the code, or null when the request was already answered.
 */
export async function approveAuthorization(db: StoreDb, session: StoreSession, input: ApproveInput): Promise<{ code: string; connection: ConnectionDoc } | null> {
  const o = oauthCollections(db);
  const { request: r, person, agent, now } = input;
  const consumed = await o.requests.deleteOne({ _id: r._id }, { session });
  if (consumed.deletedCount !== 1) return null;
  if (r.registeredClientId) {
    // A registered client must still be live; once used it no longer expires (registration.ts 5).
    const live = await o.clients.updateOne(
      { _id: r.registeredClientId, revokedAt: null, $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] },
      { $set: { expiresAt: null, lastConnectedAt: now } },
      { session },
    );
    if (live.matchedCount !== 1) return null;
  }
  const connection: ConnectionDoc = {
    _id: newId(),
    organizationId: person.organizationId,
    personId: person._id,
    grantedBy: { name: person.name },
    agentId: agent._id,
    clientId: r.clientId,
    applicationName: r.clientName,
    scopes: input.scopes,
    createdAt: now,
    revokedAt: null,
    revokedReason: null,
  };
  await connectionsCollection(db).insertOne(connection, { session });
  const code = newCredential(CODE_PREFIX);
  await o.codes.insertOne(
    {
      _id: credentialDigest(code),
      connectionId: connection._id,
      organizationId: connection.organizationId,
      personId: person._id,
      agentId: agent._id,
      clientId: r.clientId,
      redirectUri: r.redirectUri,
      codeChallenge: r.codeChallenge,
      resource: r.resource,
      scopes: input.scopes,
      createdAt: now,
      expiresAt: new Date(now.getTime() + CODE_TTL_MS),
      usedAt: null,
    },
    { session },
  );
  await recordEvent(db, session, {
    type: 'connection.created',
    organizationId: connection.organizationId,
    createdAt: now,
    data: {
      connectionId: connection._id,
      agentId: agent._id,
      application: connection.applicationName,
      clientId: connection.clientId,
      scopes: connection.scopes,
      grantedBy: { name: person.name },
    },
  });
  return { code, connection };
}

/** The agents a person may connect: their organisation's ENABLED agents, by name. */
export async function connectableAgents(collections: Collections, organizationId: string) {
  const agents = await collections.agents.find({ organizationId, status: 'ENABLED' }).toArray();
  return agents.sort((a, b) => a.name.localeCompare(b.name) || a._id.localeCompare(b._id));
}
