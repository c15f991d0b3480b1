// What identity contributes to the HTTP app (src/capability.ts HttpSurface): authentication on /v1, and
// the OAuth 2.0 endpoints with their registration and the operators' connection routes.
import type { HttpSurface } from '../capability.ts';
import { under } from '../http/router.ts';
import { authenticate } from './auth.ts';
import { connectionTokenResolver } from './connections/resolve-token.ts';
import { connectionAdminRoutes } from './oauth/admin-routes.ts';
import { registrationRoutes } from './oauth/registration-routes.ts';
import { oauthRoutes } from './oauth/routes.ts';

export const identitySurface: HttpSurface = {
  name: 'identity',
  middleware: (deps) => [under('/v1', authenticate({ db: deps.store.db, collections: deps.collections, now: deps.now, resolveAccessToken: connectionTokenResolver(deps) }))],
  routes: (deps) => [oauthRoutes(deps), registrationRoutes(deps), connectionAdminRoutes(deps)],
};
