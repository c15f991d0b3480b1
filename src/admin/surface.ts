// What the operator API contributes to the HTTP app (src/capability.ts HttpSurface).
import type { HttpSurface } from '../capability.ts';
import { adminRoutes } from './routes.ts';
export const adminSurface: HttpSurface = { name: 'admin', routes: (deps) => [adminRoutes(deps)] };
