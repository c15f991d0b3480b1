// Builders for engine inputs. Ids are readable strings: the engine never checks their shape.
import { merchantKey } from '../../src/engine/merchant-key.ts';
import type {
  AgentInput,
  EngineInput,
  EvaluationMode,
  MerchantEntry,
  PolicyCandidate,
  Rule,
  RuleEffect,
  WindowState,
} from '../../src/engine/types.ts';

let sequence = 0;
const next = (prefix: string): string => `${prefix}-${++sequence}`;

type RuleOptions = { id?: string; currency?: string | null };

export const rule = (fields: Omit<Rule, 'id' | 'currency'> & RuleOptions): Rule => ({
  id: fields.id ?? next('rule'),
  currency: fields.currency ?? null,
  ruleType: fields.ruleType,
  effect: fields.effect,
  periodKind: fields.periodKind,
  amountMinor: fields.amountMinor,
});

export const maxPerPurchase = (amountMinor: bigint, options: RuleOptions = {}): Rule =>
  rule({ ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor, ...options });
export const approvalThreshold = (amountMinor: bigint, options: RuleOptions = {}): Rule =>
  rule({ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor, ...options });
export const dailyBudget = (amountMinor: bigint, effect: RuleEffect = 'BLOCK', options: RuleOptions = {}): Rule =>
  rule({ ruleType: 'SPEND_LIMIT', effect, periodKind: 'DAY', amountMinor, ...options });
export const monthlyBudget = (amountMinor: bigint, effect: RuleEffect = 'BLOCK', options: RuleOptions = {}): Rule =>
  rule({ ruleType: 'SPEND_LIMIT', effect, periodKind: 'MONTH', amountMinor, ...options });

export const allow = (label: string, id = next('allow')): MerchantEntry => ({ id, listType: 'ALLOW', merchantKey: merchantKey(label), label });
export const block = (label: string, id = next('block')): MerchantEntry => ({ id, listType: 'BLOCK', merchantKey: merchantKey(label), label });

export interface PolicyOptions {
  id?: string;
  name?: string;
  rules?: Rule[];
  merchants?: MerchantEntry[];
  currencies?: string[];
  scopeType?: PolicyCandidate['scopeType'];
  agentIds?: string[];
  status?: PolicyCandidate['policyStatus'];
  versionStatus?: PolicyCandidate['version']['status'];
  versionId?: string;
  versionNumber?: number;
}

export function policy(options: PolicyOptions = {}): PolicyCandidate {
  const id = options.id ?? next('policy');
  return {
    policyId: id,
    policyName: options.name ?? `Policy ${id}`,
    policyStatus: options.status ?? 'ACTIVE',
    scopeType: options.scopeType ?? 'ORGANIZATION',
    agentIds: options.agentIds ?? [],
    version: {
      id: options.versionId ?? `${id}-v${options.versionNumber ?? 1}`,
      versionNumber: options.versionNumber ?? 1,
      status: options.versionStatus ?? 'ACTIVE',
      currencies: options.currencies ?? ['EUR'],
      currencyScope: 'EXPLICIT',
      rules: options.rules ?? [],
      merchants: options.merchants ?? [],
    },
  };
}

export const AGENT: AgentInput = { id: 'agent-1', status: 'ENABLED' };
export const NOW = '2026-11-21T10:00:00.000Z';
export const ZONE = 'Europe/Berlin';
/** windowId of the day and month of NOW in ZONE. */
export const dayWindow = (policyId: string, currency = 'EUR'): string => `${policyId}:${currency}:DAY:2026-11-21`;
export const monthWindow = (policyId: string, currency = 'EUR'): string => `${policyId}:${currency}:MONTH:2026-11`;

export const windowState = (committed = 0n, held = 0n, opening = 0n, budgetCounterId: string | null = null): WindowState => ({
  budgetCounterId,
  committedMinor: committed,
  heldMinor: held,
  openingBalanceMinor: opening,
});

export interface InputOptions {
  policies?: PolicyCandidate[];
  amount?: bigint;
  currency?: string;
  merchant?: string;
  agent?: AgentInput | null;
  windows?: Record<string, WindowState>;
  mode?: EvaluationMode;
  now?: string;
  timeZone?: string;
  periodInstant?: string;
}

export function input(options: InputOptions = {}): EngineInput {
  const merchant = options.merchant ?? 'Acme Supplies';
  const mode = options.mode ?? 'CURRENT_POLICIES';
  return {
    mode,
    purchase: {
      merchant,
      merchantKey: merchantKey(merchant),
      amountMinor: options.amount ?? 10_000n,
      currency: options.currency ?? 'EUR',
      category: null,
    },
    agent: options.agent === undefined ? (mode === 'CURRENT_POLICIES' ? AGENT : null) : options.agent,
    policies: options.policies ?? [],
    windows: new Map(Object.entries(options.windows ?? {})),
    now: options.now ?? NOW,
    timeZone: options.timeZone ?? ZONE,
    ...(options.periodInstant ? { periodInstant: options.periodInstant } : {}),
  };
}
