// What approvals contribute: the expiry jobs (one per pending approval, and the recurring sweep), the
// approvers' emails (src/approvals/notices.ts: a job per message due, and their sweep), the
// pending-approvals gauge, and the indexes of approvals and their notices.
import type { Capability } from '../capability.ts';
import { every } from '../jobs/agenda.ts';
import { measurePendingApprovals } from '../metrics/metrics.ts';
import { purchaseCollections } from '../purchases/documents.ts';
import { defineApprovalJobs, EXPIRE_DUE_APPROVALS, NOTIFY_DUE_APPROVALS } from './jobs.ts';
import { APPROVAL_NOTICES, NOTIFICATIONS } from './notices.ts';

export const approvals: Capability = {
  name: 'approvals',
  metrics: (deps) => measurePendingApprovals(() => purchaseCollections(deps.store.db).approvals.countDocuments({ state: 'PENDING' })),
  defineJobs: defineApprovalJobs,
  scheduleJobs: async (agenda, options) => {
    await every(agenda, options.sweepEvery ?? '1 minute', EXPIRE_DUE_APPROVALS);
    await every(agenda, options.sweepEvery ?? '1 minute', NOTIFY_DUE_APPROVALS);
  },
  collections: [NOTIFICATIONS],
  indexes: [
    { collection: 'approvals', keys: { state: 1, expiresAt: 1 } },
    // An archived agent's pending approvals, cancelled in batches by _id (src/approvals/close.ts): in order off the index.
    { collection: 'approvals', keys: { agentId: 1, state: 1, _id: 1 } },
    // The inbox, newest first (src/dashboard/queries.ts pendingApprovals): with _id, its tie-break, the newest 200
    // of an organisation's pending approvals come off the index instead of all of them being sorted in memory.
    { collection: 'approvals', keys: { organizationId: 1, state: 1, createdAt: -1, _id: -1 } },
    // A replay's carried approvals (loadCarried): those pending at its start include the ones answered since, found by when.
    { collection: 'approvals', keys: { organizationId: 1, resolvedAt: 1 } },
    // A purchase's approval (its dashboard page): otherwise a scan of the organisation's approvals.
    { collection: 'approvals', keys: { purchaseId: 1 } },
    // The email sweep: approvals of the last day whose first email was never started, in pages by (createdAt, _id).
    { collection: 'approvals', keys: { state: 1, createdAt: 1, _id: 1 } },
    { collection: APPROVAL_NOTICES, keys: { next: 1, dueAt: 1 } },
  ],
  // Each replaced by an index of which it is a prefix: { agentId, state, _id }, { organizationId, state, createdAt, _id }
  // and { state, createdAt, _id }.
  retiredIndexes: [
    { collection: 'approvals', name: 'agentId_1_state_1' },
    { collection: 'approvals', name: 'organizationId_1_state_1_createdAt_-1' },
    { collection: 'approvals', name: 'state_1_createdAt_1' },
  ],
};
