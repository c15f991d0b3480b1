// Which candidate policies govern the purchase (docs/internals/design.md §4 items 1-3).
import type { ApplicabilityReason, EngineInput, PolicyCandidate, ReasonCode } from './types.ts';

export interface ApplicablePolicy {
  candidate: PolicyCandidate;
  reason: ApplicabilityReason;
}

export interface PolicySelection {
  /** Set when the purchase is refused before any rule is read. */
  rejection: Extract<ReasonCode, 'AGENT_DISABLED' | 'NO_APPLICABLE_POLICY' | 'CURRENCY_NOT_COVERED'> | null;
  /** Applicable policies whose version covers the purchase currency, ordered by policyId. */
  covering: ApplicablePolicy[];
  /** Applicable policies whose version does not cover the purchase currency, ordered by policyId. */
  excluded: ApplicablePolicy[];
}

export type SelectionInput = Pick<EngineInput, 'mode' | 'agent' | 'policies' | 'purchase'>;

const byPolicyId = (a: ApplicablePolicy, b: ApplicablePolicy): number => {
  const x = a.candidate, y = b.candidate;
  if (x.policyId !== y.policyId) return x.policyId < y.policyId ? -1 : 1;
  return x.version.id < y.version.id ? -1 : x.version.id > y.version.id ? 1 : 0;
};

function applicability(input: SelectionInput, candidate: PolicyCandidate): ApplicabilityReason | null {
  // The two version modes evaluate the one named version as written: status and scope are ignored.
  if (input.mode !== 'CURRENT_POLICIES') return 'SIMULATED_VERSION';
  if (candidate.policyStatus !== 'ACTIVE' || candidate.version.status !== 'ACTIVE') return null;
  if (candidate.scopeType === 'ORGANIZATION') return 'ORGANIZATION_SCOPE';
  if (candidate.scopeType === 'AGENT' && input.agent && candidate.agentIds.includes(input.agent.id)) return 'AGENT_SCOPE';
  return null;
}

// The service hands the engine the same cached candidates array for an agent on every request, and
// windowKeysFor and decide both select from it: remember the last selection per array. Inputs are
// read-only; the length check is cheap.
interface Remembered {
  length: number;
  mode: SelectionInput['mode'];
  agentId: string | null;
  agentStatus: string | null;
  currency: string;
  selection: PolicySelection;
}
const remembered = new WeakMap<readonly PolicyCandidate[], Remembered>();

/** Which candidates govern the purchase. Shared between calls: never change the answer. */
export function selectPolicies(input: SelectionInput): PolicySelection {
  const agentId = input.agent?.id ?? null;
  const agentStatus = input.agent?.status ?? null;
  const currency = input.purchase.currency;
  const last = remembered.get(input.policies);
  if (
    last !== undefined &&
    last.length === input.policies.length &&
    last.mode === input.mode &&
    last.agentId === agentId &&
    last.agentStatus === agentStatus &&
    last.currency === currency
  ) {
    return last.selection;
  }
  const selection = select(input);
  remembered.set(input.policies, { length: input.policies.length, mode: input.mode, agentId, agentStatus, currency, selection });
  return selection;
}

function select(input: SelectionInput): PolicySelection {
  const covering: ApplicablePolicy[] = [];
  const excluded: ApplicablePolicy[] = [];
  // A current-policies evaluation without an agent has nobody the policies could govern.
  if (input.mode === 'CURRENT_POLICIES' && input.agent?.status !== 'ENABLED') {
    return { rejection: 'AGENT_DISABLED', covering, excluded };
  }
  const currency = input.purchase.currency;
  for (const candidate of input.policies) {
    const reason = applicability(input, candidate);
    if (reason === null) continue;
    (candidate.version.currencies.includes(currency) ? covering : excluded).push({ candidate, reason });
  }
  covering.sort(byPolicyId);
  excluded.sort(byPolicyId);
  const rejection =
    covering.length > 0 ? null : excluded.length > 0 ? 'CURRENCY_NOT_COVERED' : 'NO_APPLICABLE_POLICY';
  return { rejection, covering, excluded };
}
