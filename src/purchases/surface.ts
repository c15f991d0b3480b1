// What purchases contribute to the HTTP app (src/capability.ts HttpSurface).
import type { HttpSurface } from '../capability.ts';
import { purchaseRoutes } from './routes.ts';
export const purchasesSurface: HttpSurface = { name: 'purchases', routes: (deps) => [purchaseRoutes(deps)] };
