// What policies contribute to the store: the indexes of policies, their versions and their read model
// (their routes are surface.ts).
import type { Capability } from '../capability.ts';
import { refoldOnce } from '../store/text-search.ts';

export const policies: Capability = {
  name: 'policies',
  // Names an older release only lower-cased get the full case folding `search` now compares on.
  beforeIndexes: async (db) => void (await refoldOnce(db, { marker: 'policy_views.nameLower.caseFold', collection: 'policy_views', field: 'nameLower', source: 'summary.name' })),
  indexes: [
    { collection: 'policies', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
    { collection: 'policies', keys: { organizationId: 1, status: 1 } },
    // The dashboard's policies page, by name: read in order off the index, not sorted in memory.
    { collection: 'policies', keys: { organizationId: 1, name: 1, _id: 1 } },
    { collection: 'policy_versions', keys: { policyId: 1, versionNumber: 1 }, options: { unique: true } },
    // GET /v1/policies, newest first (src/policies/list.ts): with _id, its tie-break, a page comes off the index.
    { collection: 'policy_views', keys: { organizationId: 1, createdAt: -1, _id: -1 } },
  ],
  // Replaced by { organizationId, createdAt, _id }, of which it is a prefix.
  retiredIndexes: [{ collection: 'policy_views', name: 'organizationId_1_createdAt_-1' }],
};
