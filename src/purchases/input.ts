// Turns a validated request body into the engine's purchase: exact amount, currency defaulted to
// the organisation's own, merchant key normalised. Domain problems are `invalid_request` issues.
import { invalidRequest, type ErrorIssue } from '../http/errors.ts';
import { isIsoCurrency } from '../engine/currency.ts';
import { merchantKey } from '../engine/merchant-key.ts';
import { MAX_STORED_MINOR, parseMinor } from '../money.ts';

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

