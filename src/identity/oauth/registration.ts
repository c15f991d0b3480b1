// Dynamic Client Registration (RFC 7591), beside client ID metadata documents.
//
// docs/reference/contract.md §5.2 wants every client_id to be a URL shaped like a client metadata document address, so a
// registration issues `{auth_url}/oauth/clients/{uuid}` and serves the registered metadata there as a
// client ID metadata document: after registration the flow is the same one path. The authorization
// endpoint resolves these ids from the store (resolveClient) instead of fetching its own URL.
//
// Rules (RFC 7591 2, 3.2.2; RFC 8252; RFC 9700):
//   1. Public clients only: token_endpoint_auth_method "none" (omitted means "none" here, and the
//      response says so, RFC 7591 3.2.1); no client secret is ever issued.
//   2. grant_types within authorization_code and refresh_token; response_types only code.
//   3. redirect_uris: https, or http on a loopback address (RFC 8252 7.3), no fragment, no userinfo,
//      nothing the URL parser would not read as written (controls, white space, backslash: redirect-uri.ts).
//      Anything else is invalid_redirect_uri. (Private-use schemes are left to metadata documents,
//      whose host vouches for them; an anonymous registration could claim any scheme.)
//   4. Nothing registered is verified: the consent page says the name is the application's own claim.
//   5. A registration nobody ever connected with expires (TTL index on expiresAt) after a day.
//   6. Per source address (an IPv6 one by its /64), at most REGISTRATION_LIMIT attempts per window (countAttempt).
import type { Config } from '../../config.ts';
import type { Store, StoreDb } from '../../store/store.ts';
import { isUuid, newId } from '../../ids.ts';
import { runCommand } from '../../commands/run-command.ts';
import { connectionsCollection } from '../connections/documents.ts';
import { revokeConnectionIn } from '../connections/revoke.ts';
import { cleanText, fetchClientMetadata, type ClientMetadataResult, type FetchOptions } from './client-metadata.ts';
import { oauthCollections, type RegisteredClientDoc } from './documents.ts';
import { registeredClientIdPrefix } from './issuer.ts';
import { isLoopbackRedirect, redirectUriCharacterProblem } from './redirect-uri.ts';
import { isScope } from './scopes.ts';
import { addressBucket } from '../../http/client-address.ts';

export const REGISTRATION_MAX_BYTES = 8 * 1024;
export const REGISTRATION_TTL_MS = 24 * 60 * 60 * 1000;
export const REGISTRATION_LIMIT = 20;
/** Authorization requests (GET /oauth/authorize): each may fetch a client's metadata document and stores a request for 15 minutes. */
export const AUTHORIZATION_REQUEST_LIMIT = 120;
export const ATTEMPT_WINDOW_MS = 60 * 60 * 1000;
const LIMITS = { register: REGISTRATION_LIMIT, authorize: AUTHORIZATION_REQUEST_LIMIT } as const;
const MAX_REDIRECT_URIS = 20;
const MAX_URI_LENGTH = 2000;
const GRANT_TYPES = ['authorization_code', 'refresh_token'];

export type RegistrationRefusal = { error: 'invalid_client_metadata' | 'invalid_redirect_uri'; description: string };
export type RegistrationInput = Pick<RegisteredClientDoc, 'clientName' | 'redirectUris' | 'scope'>;

const metadataError = (description: string): RegistrationRefusal => ({ error: 'invalid_client_metadata', description });

function redirectUriProblem(uri: unknown): string | null {
  if (typeof uri !== 'string' || uri === '' || uri.length > MAX_URI_LENGTH) return 'each redirect URI must be a string of at most 2000 characters';
  // Before parsing, which would quietly normalise what this refuses.
  const characters = redirectUriCharacterProblem(uri);
  if (characters) return `${JSON.stringify(uri.slice(0, 200))} ${characters}`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${JSON.stringify(uri.slice(0, 200))} is not an absolute URL`;
  }
  if (url.hash !== '' || uri.includes('#')) return `${uri} carries a fragment`;
  if (url.username !== '' || url.password !== '') return `${uri} carries user information`;
  if (url.protocol === 'https:' || isLoopbackRedirect(url)) return null;
  if (url.protocol === 'http:') return `${uri} uses plain http on a host that is not a loopback address (only http://127.0.0.1, http://[::1] and http://localhost may)`;
  return `${uri} uses the scheme ${url.protocol} (only https and loopback http are accepted)`;
}

/** Validates a registration request body (RFC 7591 2). Unknown fields are ignored, as 2 requires. */
export function validateRegistration(body: unknown): { ok: true; input: RegistrationInput } | ({ ok: false } & RegistrationRefusal) {
  const refuse = (r: RegistrationRefusal) => ({ ok: false as const, ...r });
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return refuse(metadataError('the body must be a JSON object of client metadata'));
  const d = body as Record<string, unknown>;
  const method = d.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') {
    return refuse(metadataError(`token_endpoint_auth_method ${JSON.stringify(method)} is not supported: only public clients ("none", with PKCE) may register`));
  }
  if (d.grant_types !== undefined) {
    if (!Array.isArray(d.grant_types) || !d.grant_types.every((g) => typeof g === 'string')) return refuse(metadataError('grant_types must be an array of strings'));
    const unknown = d.grant_types.filter((g) => !GRANT_TYPES.includes(g));
    if (unknown.length > 0) return refuse(metadataError(`grant type ${unknown.map((g) => JSON.stringify(g.slice(0, 100))).join(', ')} is not supported (only authorization_code and refresh_token)`));
    if (!d.grant_types.includes('authorization_code')) return refuse(metadataError('grant_types must include authorization_code'));
  }
  if (d.response_types !== undefined) {
    if (!Array.isArray(d.response_types) || d.response_types.length === 0 || !d.response_types.every((r) => r === 'code')) {
      return refuse(metadataError('response_types may only be ["code"]'));
    }
  }
  const uris = d.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0) return refuse({ error: 'invalid_redirect_uri', description: 'redirect_uris must be a non-empty array' });
  if (uris.length > MAX_REDIRECT_URIS) return refuse({ error: 'invalid_redirect_uri', description: `at most ${MAX_REDIRECT_URIS} redirect URIs may be registered` });
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) return refuse({ error: 'invalid_redirect_uri', description: problem });
  }
  if (d.client_name !== undefined && typeof d.client_name !== 'string') return refuse(metadataError('client_name must be a string'));
  if (d.scope !== undefined && typeof d.scope !== 'string') return refuse(metadataError('scope must be a space-separated string'));
  const clientName = typeof d.client_name === 'string' ? cleanText(d.client_name, 100) || null : null;
  // RFC 7591 2: the server may register fewer scopes than asked; unknown ones are dropped here and
  // refused later if an authorization request names them.
  const known = typeof d.scope === 'string' ? d.scope.split(' ').filter(isScope) : [];
  return { ok: true, input: { clientName, redirectUris: [...new Set(uris as string[])], scope: known.length > 0 ? [...new Set(known)].join(' ') : null } };
}

export const registeredClientId = (config: Config, id: string) => registeredClientIdPrefix(config) + id;

/** The registration a client_id issued here names (lower-case, as stored), or null for any other client_id. */
export function registrationIdOf(config: Config, clientId: string): string | null {
  const prefix = registeredClientIdPrefix(config);
  if (!clientId.startsWith(prefix)) return null;
  const id = clientId.slice(prefix.length);
  return isUuid(id) ? id.toLowerCase() : null;
}

/**
 * The one spelling of a client_id: a UUID matches in any case (findLiveClient), so a client_id issued
 * here is turned into its registered form before it is stored or compared; otherwise revoking the
 * registration would miss connections made with another spelling. Other client_ids are unchanged.
 */
export function canonicalClientId(config: Config, clientId: string): string {
  const id = registrationIdOf(config, clientId);
  return id === null ? clientId : registeredClientId(config, id);
}

/** The client's metadata as RFC 7591 3.2.1 returns it and as its client ID metadata document. */
export function registeredMetadata(config: Config, doc: RegisteredClientDoc) {
  return {
    client_id: registeredClientId(config, doc._id),
    client_id_issued_at: Math.floor(doc.createdAt.getTime() / 1000),
    ...(doc.clientName !== null ? { client_name: doc.clientName } : {}),
    redirect_uris: doc.redirectUris,
    grant_types: GRANT_TYPES,
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...(doc.scope !== null ? { scope: doc.scope } : {}),
  };
}

export async function registerClient(db: StoreDb, input: RegistrationInput, now: Date): Promise<RegisteredClientDoc> {
  const doc: RegisteredClientDoc = {
    _id: newId(),
    ...input,
    createdAt: now,
    expiresAt: new Date(now.getTime() + REGISTRATION_TTL_MS),
    lastConnectedAt: null,
    revokedAt: null,
  };
  await oauthCollections(db).clients.insertOne(doc);
  return doc;
}

/**
 * Counts one attempt of `kind` from `address`; refuses beyond its limit in the current window. What one
 * address may make the authorization server store or fetch without signing in is bounded this way,
 * counted in the store so that every web process shares the count. Every attempt counts, valid or not.
 */
export async function countAttempt(db: StoreDb, kind: keyof typeof LIMITS, address: string, now: Date): Promise<{ ok: true } | { ok: false; retryAfterSeconds: number }> {
  const start = Math.floor(now.getTime() / ATTEMPT_WINDOW_MS) * ATTEMPT_WINDOW_MS;
  const counted = await oauthCollections(db).registrationWindows.findOneAndUpdate(
    { _id: `${kind} ${addressBucket(address)} ${start}` },
    { $inc: { count: 1 }, $setOnInsert: { expiresAt: new Date(start + ATTEMPT_WINDOW_MS) } },
    { upsert: true, returnDocument: 'after' },
  );
  if (counted && counted.count > LIMITS[kind]) return { ok: false, retryAfterSeconds: Math.ceil((start + ATTEMPT_WINDOW_MS - now.getTime()) / 1000) };
  return { ok: true };
}

/** A registration that is still usable: not revoked, and not past its expiry if never used. */
export async function findLiveClient(db: StoreDb, id: string, now: Date): Promise<RegisteredClientDoc | null> {
  if (!isUuid(id)) return null;
  const doc = await oauthCollections(db).clients.findOne({ _id: id.toLowerCase() });
  if (!doc || doc.revokedAt !== null || (doc.expiresAt !== null && doc.expiresAt.getTime() <= now.getTime())) return null;
  return doc;
}

/**
 * How the authorization endpoint learns who a client is: ids this service issued are read from the
 * store (no HTTP request to itself, and an expired or revoked registration is simply unknown) and
 * answered in their registered spelling, which the request, code and connection then keep; any
 * other client_id is a client ID metadata document to fetch.
 */
export function clientResolver(db: StoreDb, config: Config, now: () => Date) {
  return async (clientId: string, opts: FetchOptions): Promise<ClientMetadataResult> => {
    const prefix = registeredClientIdPrefix(config);
    if (!clientId.startsWith(prefix)) return fetchClientMetadata(clientId, opts);
    const doc = await findLiveClient(db, clientId.slice(prefix.length), now());
    if (!doc) return { ok: false, reason: 'no client is registered under this client_id (registrations nobody connects with expire after a day)' };
    return {
      ok: true,
      metadata: {
        clientId: registeredClientId(config, doc._id),
        clientName: doc.clientName ?? 'An unnamed application',
        clientHost: new URL(config.authUrl).host,
        // One stored before such URIs were refused at registration binds no flow.
        redirectUris: doc.redirectUris.filter((uri) => redirectUriCharacterProblem(uri) === null),
        scope: doc.scope,
        registeredId: doc._id,
      },
    };
  };
}

/**
 * Operator revocation: the registration stops resolving at once (no new authorization can start or
 * finish), then every connection made with it is revoked, one transaction each, with
 * `connection.revoked` in its organisation. Idempotent: calling it again finishes an interrupted run.
 */
export async function revokeRegisteredClient(store: Store, config: Config, id: string, now: Date): Promise<{ client: RegisteredClientDoc | null; connectionsRevoked: number }> {
  if (!isUuid(id)) return { client: null, connectionsRevoked: 0 };
  const clients = oauthCollections(store.db).clients;
  const key = id.toLowerCase();
  await clients.updateOne({ _id: key, revokedAt: null }, { $set: { revokedAt: now, expiresAt: null } });
  const client = await clients.findOne({ _id: key });
  if (!client) return { client: null, connectionsRevoked: 0 };
  const active = await connectionsCollection(store.db).find({ clientId: registeredClientId(config, key), revokedAt: null }).toArray();
  let connectionsRevoked = 0;
  for (const connection of active) {
    const { revokedNow } = await runCommand(store, (session) => revokeConnectionIn(store.db, session, connection._id, 'OPERATOR', now));
    if (revokedNow) connectionsRevoked++;
  }
  return { client, connectionsRevoked };
}
