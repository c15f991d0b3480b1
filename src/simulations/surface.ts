// What simulations contribute to the HTTP app (src/capability.ts HttpSurface).
import type { HttpSurface } from '../capability.ts';
import { simulationRoutes, shadowRoutes } from './routes.ts';
export const simulationsSurface: HttpSurface = { name: 'simulations', routes: (deps) => [simulationRoutes(deps), shadowRoutes(deps)] };
