// What agents contribute to the HTTP app (src/capability.ts HttpSurface).
import type { HttpSurface } from '../capability.ts';
import { agentRoutes } from './routes.ts';
export const agentsSurface: HttpSurface = { name: 'agents', routes: (deps) => [agentRoutes(deps)] };
