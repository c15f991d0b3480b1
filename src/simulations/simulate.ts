// The three simulations (docs/reference/contract.md §4.3-4.5): the same pure evaluation as a submission, against the
// policies in force or one version, with the budget windows as they stand. Nothing is written.
import type { AppDeps } from '../app-deps.ts';
import { notFound, invalidRequest } from '../http/errors.ts';
import { decideWithBudgets } from '../engine/decide.ts';
import { windowKeysFor } from '../engine/periods.ts';
import type { EvaluationMode, PolicyCandidate } from '../engine/types.ts';
import { candidatesFor, toCandidate, toEngineVersion } from '../policies/candidates.ts';
import { loadWindows } from '../budgets/windows.ts';
import type { AgentDoc, OrganizationDoc } from '../store/collections.ts';
import { engineBase, type PurchaseInput } from '../purchases/input.ts';
import { simulationResponse } from './present.ts';
import { timeEngine } from '../metrics/timing.ts';

async function evaluate(deps: AppDeps, org: OrganizationDoc, purchase: PurchaseInput, mode: EvaluationMode, agent: AgentDoc | null, policies: PolicyCandidate[]) {
  const now = deps.now();
  const base = engineBase({ mode, purchase, agent, policies, now, timeZone: org.timezone });
  const loaded = await loadWindows(deps.store.db, windowKeysFor(base));
  return simulationResponse(timeEngine(() => decideWithBudgets({ ...base, windows: loaded.states })), purchase, agent, now);
}

export async function simulateCurrentPolicies(deps: AppDeps, org: OrganizationDoc, agentId: string, purchase: PurchaseInput) {
  const agent = await deps.collections.agents.findOne({ _id: agentId, organizationId: org._id });
  if (!agent) throw notFound('agent');
  const candidates = await candidatesFor(deps.collections, org._id, agent._id);
  return evaluate(deps, org, purchase, 'CURRENT_POLICIES', agent, candidates);
}

/** DRAFT_POLICY takes a DRAFT version as currently written; POLICY_VERSION an ACTIVE or ARCHIVED one as frozen. */
export async function simulateVersion(deps: AppDeps, org: OrganizationDoc, mode: 'DRAFT_POLICY' | 'POLICY_VERSION', versionId: string, purchase: PurchaseInput) {
  const version = await deps.collections.policyVersions.findOne({ _id: versionId, organizationId: org._id });
  if (!version) throw notFound('policy version');
  const wantsDraft = mode === 'DRAFT_POLICY';
  if (wantsDraft !== (version.status === 'DRAFT')) {
    throw invalidRequest([
      wantsDraft
        ? { path: 'policyVersionId', code: 'VERSION_NOT_DRAFT', message: `Version ${version.versionNumber} is ${version.status}; simulate it with /v1/simulations/policy-version.` }
        : { path: 'policyVersionId', code: 'VERSION_IS_DRAFT', message: `Version ${version.versionNumber} is a DRAFT; simulate it with /v1/simulations/draft-policy.` },
    ]);
  }
  const policy = await deps.collections.policies.findOne({ _id: version.policyId, organizationId: org._id });
  if (!policy) throw notFound('policy version');
  return evaluate(deps, org, purchase, mode, null, [toCandidate(policy, toEngineVersion(version))]);
}
