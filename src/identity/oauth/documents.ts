// Documents of the authorization server. Credentials are stored only as SHA-256 digests (the `_id`),
// so a lookup is by digest and a database reader learns no usable token. Every document carries
// `expiresAt`, with a TTL index, so expired ones are cleaned without a job.
import type { Scope } from '../auth.ts';
import type { StoreDb } from '../../store/store.ts';

/** An authorization request in progress, between GET /oauth/authorize and the consent answer. */
export interface AuthorizationRequestDoc {
  /** Random, public: it travels in forms and the consent URL. Useless without the browser cookie. */
  _id: string;
  /** Digest of the browser-binding cookie that started this request. */
  browserDigest: string;
  /** The CSRF token the pages embed; compared in constant time on every POST. Worthless without the cookie. */
  csrfToken: string;
  clientId: string;
  clientName: string;
  clientHost: string;
  /** The registration's id for a client registered here (RFC 7591), whose name is unverified; else null. */
  registeredClientId: string | null;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  resource: string;
  scopes: Scope[];
  /**
   * A metadata-document client whose redirect URIs are all on the person's machine (onlyLocalRedirects):
   * the consent page warns. Absent on requests stored before it existed.
   */
  localRedirectsOnly?: boolean;
  /** Set once a person signed in on this request. */
  personId: string | null;
  failedSignIns: number;
  createdAt: Date;
  expiresAt: Date;
}

export interface AuthorizationCodeDoc {
  _id: string;
  connectionId: string;
  organizationId: string;
  personId: string;
  agentId: string;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  scopes: Scope[];
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

export interface AccessTokenDoc {
  _id: string;
  connectionId: string;
  clientId: string;
  scopes: Scope[];
  /** The audience (RFC 8707): always `{base_url}/mcp` when issued. */
  resource: string;
  createdAt: Date;
  expiresAt: Date;
}

export interface RefreshTokenDoc {
  _id: string;
  connectionId: string;
  clientId: string;
  scopes: Scope[];
  resource: string;
  createdAt: Date;
  expiresAt: Date;
  /** Set when rotated; presenting it again is reuse (docs/reference/contract.md §5.2). */
  consumedAt: Date | null;
}

/**
 * A client registered through RFC 7591 (POST /oauth/register). Its client_id is
 * `{auth_url}/oauth/clients/{_id}`, where the same metadata is served as a client ID metadata
 * document. Nothing in it is verified: anyone may register any name.
 */
export interface RegisteredClientDoc {
  /** UUID; the last segment of the client_id. */
  _id: string;
  clientName: string | null;
  redirectUris: string[];
  /** Space-separated scopes the client registered, or null for all. */
  scope: string | null;
  createdAt: Date;
  /** Set until a person first approves a connection for it; the TTL index removes unused ones. */
  expiresAt: Date | null;
  /** When a person last approved a connection for it. */
  lastConnectedAt: Date | null;
  revokedAt: Date | null;
}

/** Registrations and authorization requests counted per source address and fixed window (countAttempt). */
export interface RegistrationWindowDoc {
  /** `{register|authorize} {address} {window start ms}` */
  _id: string;
  count: number;
  expiresAt: Date;
}

export const oauthCollections = (db: StoreDb) => ({
  requests: db.collection<AuthorizationRequestDoc>('oauth_authorization_requests'),
  codes: db.collection<AuthorizationCodeDoc>('oauth_codes'),
  accessTokens: db.collection<AccessTokenDoc>('oauth_access_tokens'),
  refreshTokens: db.collection<RefreshTokenDoc>('oauth_refresh_tokens'),
  clients: db.collection<RegisteredClientDoc>('oauth_clients'),
  registrationWindows: db.collection<RegistrationWindowDoc>('oauth_registration_windows'),
});
