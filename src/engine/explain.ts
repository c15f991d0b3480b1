// Human sentences: per-rule messages and the one-sentence explanation of a decision.
// Not a stable contract (docs/reference/contract.md §2.3): wording may change; clients branch on codes.
import type { EvaluationRole, Outcome, ReasonCode, RuleEvaluation, WindowPeriodKind } from './types.ts';

const ROLE_NOUN: Record<EvaluationRole, string> = {
  PER_PURCHASE_MAXIMUM: 'per-purchase maximum',
  APPROVAL_THRESHOLD: 'approval threshold',
  SPENDING_BUDGET: 'budget',
  SPENDING_ESCALATION: 'approval limit',
  MERCHANT_BLOCK_LIST: 'merchant block list',
  MERCHANT_ALLOW_LIST: 'merchant allow list',
};

const ADJECTIVE: Record<WindowPeriodKind, string> = { DAY: 'daily', MONTH: 'monthly' };
const SPAN: Record<WindowPeriodKind, string> = { DAY: 'this day', MONTH: 'this month' };

export const limitNoun = (role: EvaluationRole, periodKind: WindowPeriodKind | null): string =>
  periodKind === null ? ROLE_NOUN[role] : PERIOD_NOUN[periodKind][role];

// 'daily budget', 'monthly approval limit', ...: built once, not per evaluation.
const PERIOD_NOUN: Record<WindowPeriodKind, Record<EvaluationRole, string>> = {
  DAY: Object.fromEntries(Object.entries(ROLE_NOUN).map(([role, noun]) => [role, `${ADJECTIVE.DAY} ${noun}`])) as Record<EvaluationRole, string>,
  MONTH: Object.fromEntries(Object.entries(ROLE_NOUN).map(([role, noun]) => [role, `${ADJECTIVE.MONTH} ${noun}`])) as Record<EvaluationRole, string>,
};

/** The part of a sentence after the subject, e.g. 'is above the per-purchase maximum of 500.00 EUR'. */
export function amountPredicate(role: EvaluationRole, over: boolean, limit: string): string {
  return `is ${over ? 'above' : 'within'} the ${ROLE_NOUN[role]} of ${limit}`;
}

// A rule's message is assembled from a part that depends only on the rule (cached with it by decide)
// and the amounts of this purchase, so that each message costs one or two concatenations.

/** 'This purchase would bring spending this day to ': a spend limit's message, up to the projection. */
export const spendLead = (kind: WindowPeriodKind): string => SPEND_LEAD[kind];
const SPEND_LEAD: Record<WindowPeriodKind, string> = {
  DAY: `This purchase would bring spending ${SPAN.DAY} to `,
  MONTH: `This purchase would bring spending ${SPAN.MONTH} to `,
};

/** ', within the daily budget of 200.00 EUR.': a spend limit's message after the projection. */
export const spendTail = (role: EvaluationRole, kind: WindowPeriodKind, over: boolean, limit: string): string =>
  `, ${over ? 'above' : 'within'} the ${PERIOD_NOUN[kind][role]} of ${limit}.`;

/**
 * ', more than a budget can count.': a window whose total would pass what it can hold exactly
 * (MAX_WINDOW_MINOR), refused whatever its limit's effect.
 */
export const UNCOUNTABLE_TAIL = ', more than a budget can count.';

export function uncountablePredicate(kind: WindowPeriodKind, projected: string): string {
  return `would bring spending ${SPAN[kind]} to ${projected}, more than a budget can count`;
}

/** ' is within the per-purchase maximum of 500.00 EUR.': a per-purchase rule's message after the amount. */
export const amountTail = (role: EvaluationRole, over: boolean, limit: string): string => ` ${amountPredicate(role, over, limit)}.`;

export function spendPredicate(role: EvaluationRole, kind: WindowPeriodKind, over: boolean, projected: string, limit: string): string {
  return `would bring spending ${SPAN[kind]} to ${projected}, ${over ? 'above' : 'within'} the ${PERIOD_NOUN[kind][role]} of ${limit}`;
}

const names = (policyNames: string[]): string =>
  policyNames.length === 1
    ? policyNames[0]
    : policyNames.length === 2
      ? `${policyNames[0]} and ${policyNames[1]}`
      : `${policyNames.length} policies`;

const others = (count: number, outcome: Outcome): string => {
  if (count === 0) return '';
  const verb = outcome === 'REJECTED' ? (count === 1 ? 'blocks it' : 'block it') : count === 1 ? 'asks for approval' : 'ask for approval';
  return `, and ${count} other ${count === 1 ? 'rule' : 'rules'} also ${verb}`;
};

export interface ExplanationFacts {
  outcome: Outcome;
  /** '600.00 EUR at Shady Goods Ltd' */
  subject: string;
  /** The blocking (REJECTED) or escalating (REQUIRES_APPROVAL) evaluation shown to the person. */
  primary: (RuleEvaluation & { predicate: string }) | null;
  /** How many further evaluations block or escalate. */
  otherCount: number;
  policyNames: string[];
}

export function explain(facts: ExplanationFacts): string {
  const { outcome, primary } = facts;
  if (outcome === 'APPROVED') return `Approved: ${facts.subject} is within the rules of ${names(facts.policyNames)}.`;
  const lead = outcome === 'REJECTED' ? 'Rejected' : 'Needs approval';
  if (primary === null) return `${lead}: ${facts.subject}.`;
  return `${lead}: ${primary.predicate} set by ${primary.policyName}${others(facts.otherCount, outcome)}.`;
}

export function explainRefusal(reason: ReasonCode, facts: { agentStatus: string | null; currency: string; simulated: boolean }): string {
  switch (reason) {
    case 'AGENT_DISABLED':
      return facts.agentStatus === null
        ? 'Rejected: there is no enabled agent to make the purchase.'
        : `Rejected: the agent is ${facts.agentStatus.toLowerCase()}, so it may not make purchases.`;
    case 'CURRENCY_NOT_COVERED':
      return `Rejected: no ${facts.simulated ? 'simulated policy version' : 'policy in force'} covers purchases in ${facts.currency}, and currencies are never converted.`;
    default:
      return facts.simulated
        ? 'Rejected: there is no policy version to evaluate, so the purchase is denied by default.'
        : 'Rejected: no policy in force applies to this agent, so the purchase is denied by default.';
  }
}
