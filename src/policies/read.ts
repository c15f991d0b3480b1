// GET /v1/policies/{id} and GET /v1/policies/{id}/versions/{versionId} (docs/reference/contract.md §4.7, §4.8).
// Another organisation's policy is indistinguishable from one that does not exist.
import type { Collections } from '../store/collections.ts';
import { notFound } from '../http/errors.ts';
import { policySummary, VERSION_SUMMARY_PROJECTION, versionFull, versionSummary, type VersionSummaryDoc } from './present.ts';

export async function getPolicy(c: Collections, organizationId: string, policyId: string) {
  const policy = await c.policies.findOne({ _id: policyId, organizationId });
  if (!policy) throw notFound('policy');
  // Every version: the contract's PolicyDetail lists them and no other route does (docs/reference/decisions.md).
  const versions = (await c.policyVersions.find({ policyId }, { projection: VERSION_SUMMARY_PROJECTION }).sort({ versionNumber: -1 }).toArray()) as unknown as VersionSummaryDoc[];
  const active = versions.find((v) => v._id === policy.activeVersionId) ?? null;
  return {
    policy: {
      ...policySummary(policy, active),
      agentIds: policy.agentIds,
      versions: versions.map(versionSummary),
    },
  };
}

export async function getPolicyVersionDoc(c: Collections, organizationId: string, policyId: string, versionId: string) {
  const version = await c.policyVersions.findOne({ _id: versionId, policyId, organizationId });
  if (!version) throw notFound('policy version');
  return version;
}

export async function getPolicyVersion(c: Collections, organizationId: string, policyId: string, versionId: string) {
  return { version: versionFull(await getPolicyVersionDoc(c, organizationId, policyId, versionId)) };
}
