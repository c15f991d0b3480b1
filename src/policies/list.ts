// GET /v1/policies (docs/reference/contract.md §4.6): reads the policy_views read model.
import type { Collections, PolicyStatus } from '../store/collections.ts';
import { containsFolded } from '../store/text-search.ts';

export interface ListPoliciesQuery {
  organizationId: string;
  status?: PolicyStatus;
  search?: string;
  page: number;
  pageSize: number;
}

export async function listPolicies(c: Collections, q: ListPoliciesQuery) {
  const filter: Record<string, unknown> = { organizationId: q.organizationId };
  if (q.status) filter.status = q.status;
  if (q.search) filter.nameLower = containsFolded(q.search);
  const total = await c.policyViews.countDocuments(filter);
  const totalPages = Math.max(1, Math.ceil(total / q.pageSize));
  // A page past the end is empty (docs/reference/contract.md §4.6), however far past: no skip beyond the data.
  const rows = q.page > totalPages ? [] : await c.policyViews
    .find(filter)
    .sort({ createdAt: -1, _id: -1 })
    .skip((q.page - 1) * q.pageSize)
    .limit(q.pageSize)
    .toArray();
  return {
    policies: rows.map((r) => r.summary),
    pagination: { page: q.page, pageSize: q.pageSize, total, totalPages },
  };
}
