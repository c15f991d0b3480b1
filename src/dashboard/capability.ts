// What the people's dashboard contributes: its pages under /dashboard.
import type { Capability } from '../capability.ts';
import { dashboardRoutes } from './routes.ts';

export const dashboard: Capability = { name: 'dashboard', routes: (deps) => [dashboardRoutes(deps)] };
