// What the people's dashboard (its pages under /dashboard) contributes to the HTTP app (src/capability.ts HttpSurface).
import type { HttpSurface } from '../capability.ts';
import { dashboardRoutes } from './routes.ts';
export const dashboardSurface: HttpSurface = { name: 'dashboard', routes: (deps) => [dashboardRoutes(deps)] };
