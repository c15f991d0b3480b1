// What the operator API contributes: its routes under /admin (DESIGN.md section 5).
import type { Capability } from '../capability.ts';
import { adminRoutes } from './routes.ts';

export const admin: Capability = { name: 'admin', routes: (deps) => [adminRoutes(deps)] };
