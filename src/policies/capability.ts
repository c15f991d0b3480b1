// What policies contribute: the refusal of policy authoring on /v1, the read routes, and the indexes of
// policies, their versions and their read model.
import type { Capability } from '../capability.ts';
import { under } from '../http/router.ts';
import { policyRoutes, refuseAuthoring } from './routes.ts';

export const policies: Capability = {
  name: 'policies',
  middleware: () => [under('/v1', refuseAuthoring)],
  routes: (deps) => [policyRoutes(deps)],
  indexes: [
    { collection: 'policies', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
    { collection: 'policies', keys: { organizationId: 1, status: 1 } },
    { collection: 'policy_versions', keys: { policyId: 1, versionNumber: 1 }, options: { unique: true } },
    { collection: 'policy_views', keys: { organizationId: 1, createdAt: -1 } },
  ],
};
