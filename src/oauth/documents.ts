// Documents of the authorization server. Credentials are stored only as SHA-256 digests (the `_id`),
// so a lookup is by digest and a database reader learns no usable token. Every document carries
// `expiresAt`, with a TTL index, so expired ones are cleaned without a job.
import type { Scope } from '../http/auth.ts';
import type { StoreDb } from '../store/store.ts';

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
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  resource: string;
  scopes: Scope[];
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
  /** Set when rotated; presenting it again is reuse (SPEC.md 5.2). */
  consumedAt: Date | null;
}

export const oauthCollections = (db: StoreDb) => ({
  requests: db.collection<AuthorizationRequestDoc>('oauth_authorization_requests'),
  codes: db.collection<AuthorizationCodeDoc>('oauth_codes'),
  accessTokens: db.collection<AccessTokenDoc>('oauth_access_tokens'),
  refreshTokens: db.collection<RefreshTokenDoc>('oauth_refresh_tokens'),
});
