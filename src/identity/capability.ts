// What identity contributes to the store: the collections of organisations, people, keys, connections,
// OAuth and sign-in sessions. Its HTTP part (surface.ts): the /v1 credential check (API keys, and OAuth
// access tokens through the connections), the authorization server and client registration, and the
// operator API for connections, passwords and clients.
import type { Capability } from '../capability.ts';

export const identity: Capability = {
  name: 'identity',
  indexes: [
    { collection: 'organizations', keys: { handle: 1 }, options: { unique: true } },
    { collection: 'people', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
    { collection: 'people', keys: { email: 1 } },
    // How many may approve (src/identity/people/roles.ts approverCount): both branches of its $or on roles, no
    // roles or the approver role, narrowed by the index rather than filtered over every person of the organisation.
    { collection: 'people', keys: { organizationId: 1, roles: 1 } },
    // The people an approval's email goes to, in _id order (src/approvals/notices.ts): off the index, not sorted in memory.
    { collection: 'people', keys: { organizationId: 1, _id: 1 } },
    { collection: 'api_keys', keys: { prefix: 1 }, options: { unique: true } },
    { collection: 'api_keys', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
    // The dashboard's keys page, newest first (ties by _id ascending): read in order off the index, not an
    // organisation's keys, one or more per agent, sorted in memory.
    { collection: 'api_keys', keys: { organizationId: 1, createdAt: -1, _id: 1 } },
    // The keys page passes over keys revoked long ago (stillListed): found by organisation and revocation.
    { collection: 'api_keys', keys: { organizationId: 1, revokedAt: 1 } },
    // Connections (OAuth 2.0 and MCP)
    // The lists of connections, newest first (listedConnections): with _id, their tie-break, in order off the index.
    { collection: 'connections', keys: { organizationId: 1, createdAt: -1, _id: -1 } },
    // The lists pass over connections revoked long ago (stillListed): found by organisation and revocation.
    { collection: 'connections', keys: { organizationId: 1, revokedAt: 1 } },
    { collection: 'connections', keys: { clientId: 1 } },
    // A new password ends what the old one opened (src/identity/people/set-password.ts): found by person.
    { collection: 'connections', keys: { personId: 1 } },
    { collection: 'oauth_authorization_requests', keys: { personId: 1 } },
    { collection: 'oauth_authorization_requests', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'oauth_codes', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'oauth_access_tokens', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'oauth_access_tokens', keys: { connectionId: 1 } },
    { collection: 'oauth_refresh_tokens', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'oauth_refresh_tokens', keys: { connectionId: 1 } },
    { collection: 'oauth_clients', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    // The operator API's newest clients (src/identity/oauth/admin-routes.ts): with _id, its tie-break, off the index.
    { collection: 'oauth_clients', keys: { createdAt: -1, _id: -1 } },
    { collection: 'oauth_registration_windows', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    // The people's sign-in sessions and failed sign-in counters (src/identity/sessions/documents.ts)
    { collection: 'dashboard_sessions', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'dashboard_sessions', keys: { personId: 1 } },
    { collection: 'dashboard_sign_in_throttle', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  ],
  // Each replaced by an index of which it is a prefix: { organizationId, createdAt, _id } and { createdAt, _id }.
  retiredIndexes: [
    { collection: 'connections', name: 'organizationId_1_createdAt_-1' },
    { collection: 'oauth_clients', name: 'createdAt_-1' },
  ],
};
