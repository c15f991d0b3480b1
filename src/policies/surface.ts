// What policies contribute to the HTTP app (src/capability.ts HttpSurface): their routes, and the refusal
// of policy authoring on /v1.
import type { HttpSurface } from '../capability.ts';
import { under } from '../http/router.ts';
import { policyRoutes, refuseAuthoring } from './routes.ts';

export const policiesSurface: HttpSurface = {
  name: 'policies',
  middleware: () => [under('/v1', refuseAuthoring)],
  routes: (deps) => [policyRoutes(deps)],
};
