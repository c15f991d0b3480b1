// What identity contributes: the /v1 credential check (API keys, and OAuth access tokens through the
// connections), the authorization server and client registration, the operator API for connections,
// passwords and clients, and the collections of organisations, people, keys, connections, OAuth and
// sign-in sessions.
import type { Capability } from '../capability.ts';
import { under } from '../http/router.ts';
import { authenticate } from './auth.ts';
import { connectionTokenResolver } from './connections/resolve-token.ts';
import { connectionAdminRoutes } from './oauth/admin-routes.ts';
import { registrationRoutes } from './oauth/registration-routes.ts';
import { oauthRoutes } from './oauth/routes.ts';

export const identity: Capability = {
  name: 'identity',
  middleware: (deps) => [under('/v1', authenticate({ db: deps.store.db, collections: deps.collections, now: deps.now, resolveAccessToken: connectionTokenResolver(deps) }))],
  routes: (deps) => [oauthRoutes(deps), registrationRoutes(deps), connectionAdminRoutes(deps)],
  indexes: [
    { collection: 'organizations', keys: { handle: 1 }, options: { unique: true } },
    { collection: 'people', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
    { collection: 'people', keys: { email: 1 } },
    { collection: 'api_keys', keys: { prefix: 1 }, options: { unique: true } },
    { collection: 'api_keys', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
    // Connections (OAuth 2.0 and MCP)
    { collection: 'connections', keys: { organizationId: 1, createdAt: -1 } },
    { collection: 'connections', keys: { clientId: 1 } },
    { collection: 'oauth_authorization_requests', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'oauth_codes', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'oauth_access_tokens', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'oauth_access_tokens', keys: { connectionId: 1 } },
    { collection: 'oauth_refresh_tokens', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'oauth_refresh_tokens', keys: { connectionId: 1 } },
    { collection: 'oauth_clients', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'oauth_clients', keys: { createdAt: -1 } },
    { collection: 'oauth_registration_windows', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    // The people's sign-in sessions and failed sign-in counters (src/identity/sessions/documents.ts)
    { collection: 'dashboard_sessions', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
    { collection: 'dashboard_sign_in_throttle', keys: { expiresAt: 1 }, options: { expireAfterSeconds: 0 } },
  ],
};
