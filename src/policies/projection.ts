// Keeps the `policy_views` read model in step with a policy, in the caller's transaction.
import type { Collections } from '../store/collections.ts';
import type { StoreSession } from '../store/store.ts';
import { caseFold } from '../store/text-search.ts';
import { policySummary, VERSION_SUMMARY_PROJECTION, type VersionSummaryDoc } from './present.ts';

export async function projectPolicy(c: Collections, session: StoreSession, policyId: string): Promise<void> {
  const policy = await c.policies.findOne({ _id: policyId }, { session });
  if (!policy) return;
  const active = policy.activeVersionId
    ? ((await c.policyVersions.findOne({ _id: policy.activeVersionId }, { session, projection: VERSION_SUMMARY_PROJECTION })) as VersionSummaryDoc | null)
    : null;
  await c.policyViews.replaceOne(
    { _id: policy._id },
    {
      organizationId: policy.organizationId,
      nameLower: caseFold(policy.name),
      status: policy.status,
      createdAt: policy.createdAt,
      summary: policySummary(policy, active),
    },
    { upsert: true, session },
  );
}
