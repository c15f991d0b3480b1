// What src/http/app.ts mounts for the connections capability (issue 6), in this order.
import type Router from '@koa/router';
import type { AppDeps } from '../../app-deps.ts';
import { mcpRoutes } from '../../mcp/routes.ts';
import { connectionAdminRoutes } from './admin-routes.ts';
import { registrationRoutes } from './registration-routes.ts';
import { oauthRoutes } from './routes.ts';

export function connectionRouters(deps: AppDeps): Router[] {
  return [oauthRoutes(deps), registrationRoutes(deps), mcpRoutes(deps), connectionAdminRoutes(deps)];
}
