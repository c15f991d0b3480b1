// What approvals contribute: the expiry jobs (one per pending approval, and the recurring sweep), the
// pending-approvals gauge, and the approvals collection's indexes.
import type { Capability } from '../capability.ts';
import { every } from '../jobs/agenda.ts';
import { measurePendingApprovals } from '../metrics/metrics.ts';
import { purchaseCollections } from '../purchases/documents.ts';
import { defineApprovalJobs, EXPIRE_DUE_APPROVALS } from './jobs.ts';

export const approvals: Capability = {
  name: 'approvals',
  metrics: (deps) => measurePendingApprovals(() => purchaseCollections(deps.store.db).approvals.countDocuments({ state: 'PENDING' })),
  defineJobs: defineApprovalJobs,
  scheduleJobs: (agenda, options) => every(agenda, options.sweepEvery ?? '1 minute', EXPIRE_DUE_APPROVALS),
  indexes: [
    { collection: 'approvals', keys: { state: 1, expiresAt: 1 } },
    { collection: 'approvals', keys: { agentId: 1, state: 1 } },
    { collection: 'approvals', keys: { organizationId: 1, state: 1, createdAt: -1 } },
  ],
};
