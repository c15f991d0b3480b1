// What agents contribute to the store: the agents collection's indexes (GET /v1/agents is surface.ts).
import type { Capability } from '../capability.ts';

export const agents: Capability = {
  name: 'agents',
  indexes: [
    { collection: 'agents', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
    // The dashboard's agent lists (purchases filter, new purchase), by name: read in order off the index, not
    // sorted in memory, an organisation's thousands of agents.
    { collection: 'agents', keys: { organizationId: 1, name: 1 } },
    // GET /v1/agents, oldest first (src/agents/routes.ts), in order off the index.
    { collection: 'agents', keys: { organizationId: 1, createdAt: 1, _id: 1 } },
    // Archives whose follow-up is unfinished (src/approvals/close.ts finishInterruptedArchives).
    { collection: 'agents', keys: { cancelApprovals: 1 }, options: { partialFilterExpression: { cancelApprovals: true } } },
  ],
};
