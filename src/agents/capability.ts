// What agents contribute: GET /v1/agents and the agents collection's indexes.
import type { Capability } from '../capability.ts';
import { agentRoutes } from './routes.ts';

export const agents: Capability = {
  name: 'agents',
  routes: (deps) => [agentRoutes(deps)],
  indexes: [
    { collection: 'agents', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
    // Archives whose follow-up is unfinished (src/approvals/close.ts finishInterruptedArchives).
    { collection: 'agents', keys: { cancelApprovals: 1 }, options: { partialFilterExpression: { cancelApprovals: true } } },
  ],
};
