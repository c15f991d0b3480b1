// Turns a validated request body into the engine's purchase: exact amount, currency defaulted to
// the organisation's own, merchant key normalised. Domain problems are `invalid_request` issues.
import { invalidRequest, type ErrorIssue } from '../http/errors.ts';
import { isIsoCurrency } from '../engine/currency.ts';
import { merchantKey } from '../engine/merchant-key.ts';
import { MAX_STORED_MINOR, parseMinor } from '../money.ts';
import type { EngineInput, EvaluationMode, PolicyCandidate } from '../engine/types.ts';
import type { AgentDoc } from '../store/collections.ts';

export interface PurchaseInput {
  merchant: string;
  merchantKey: string;
  merchantDomain: string | null;
  amountMinor: bigint;
  currency: string;
  category: string | null;
  reason: string;
}

export function purchaseInput(
  body: { merchant: string; amountMinor: string | number; reason: string; currency?: string | null; category?: string | null; merchantDomain?: string | null },
  organizationCurrency: string,
): PurchaseInput {
  const issues: ErrorIssue[] = [];
  const amount = parseMinor(body.amountMinor);
  if (amount === null) issues.push({ path: 'amountMinor', code: 'AMOUNT_NOT_INTEGER', message: 'amountMinor is a whole number of minor units.' });
  else if (amount <= 0n) issues.push({ path: 'amountMinor', code: 'AMOUNT_NOT_POSITIVE', message: 'amountMinor must be greater than zero.' });
  else if (amount > MAX_STORED_MINOR) issues.push({ path: 'amountMinor', code: 'AMOUNT_TOO_LARGE', message: `amountMinor is at most ${MAX_STORED_MINOR}.` });
  const currency = body.currency ?? organizationCurrency;
  if (!isIsoCurrency(currency)) issues.push({ path: 'currency', code: 'CURRENCY_NOT_ISO_4217', message: `${currency} is not an ISO 4217 currency.` });
  const key = merchantKey(body.merchant);
  if (key === '') issues.push({ path: 'merchant', code: 'MERCHANT_EMPTY', message: 'merchant needs letters or digits.' });
  if (body.reason.trim() === '') issues.push({ path: 'reason', code: 'REASON_EMPTY', message: 'reason must say why.' });
  if (issues.length > 0) throw invalidRequest(issues);
  return {
    merchant: body.merchant,
    merchantKey: key,
    merchantDomain: body.merchantDomain ?? null,
    amountMinor: amount!,
    currency,
    category: body.category ?? null,
    reason: body.reason,
  };
}


/**
 * The engine's input (without the windows) for a purchase evaluated for an agent at `now` in the
 * organisation's zone: the one shape a submission, an answer and a simulation all hand to the engine.
 */
export function engineBase(args: {
  mode: EvaluationMode;
  purchase: Pick<PurchaseInput, 'merchantKey' | 'merchant' | 'amountMinor' | 'currency' | 'category'>;
  agent: Pick<AgentDoc, '_id' | 'status'> | null;
  policies: PolicyCandidate[];
  now: Date;
  timeZone: string;
  /** When the purchase was held: a re-evaluation counts it in the windows holding it. */
  periodInstant?: Date;
}): Omit<EngineInput, 'windows'> {
  const p = args.purchase;
  return {
    mode: args.mode,
    purchase: { merchantKey: p.merchantKey, merchant: p.merchant, amountMinor: p.amountMinor, currency: p.currency, category: p.category },
    agent: args.agent ? { id: args.agent._id, status: args.agent.status } : null,
    policies: args.policies,
    now: args.now.toISOString(),
    timeZone: args.timeZone,
    ...(args.periodInstant ? { periodInstant: args.periodInstant.toISOString() } : {}),
  };
}
