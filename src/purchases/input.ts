// Turns a validated request body into the engine's purchase: exact amount, currency defaulted to
// the organisation's own, merchant key normalised. Domain problems are `invalid_request` issues.
import type { Static, TSchema } from 'typebox';
import { invalidRequest, type ErrorIssue } from '../http/errors.ts';
import { capIssues, type Validator } from '../http/validate.ts';
import { isIsoCurrency } from '../engine/currency.ts';
import { merchantKey } from '../engine/merchant-key.ts';
import { MAX_STORED_MINOR, minorAmountFault, parseMinor } from '../money.ts';
import { beyondDouble } from '../json.ts';
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

type PurchaseFields = { merchant: string; amountMinor: string | number; reason: string; currency?: string | null; category?: string | null; merchantDomain?: string | null };

/**
 * Validates a purchase body in one pass: the schema's issues and the domain's (amount, currency,
 * merchant, reason, plus `more` for the caller's own rules) in one list, so no problem hides another.
 * A domain rule looks only at a field the schema accepted.
 */
export function parsePurchase<T extends TSchema>(
  validator: Validator<T>,
  value: unknown,
  organizationCurrency: string,
  more: (body: Record<string, unknown>) => ErrorIssue[] = () => [],
): { body: Static<T>; purchase: PurchaseInput } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest([{ path: 'body', code: 'INVALID_TYPE', message: 'The body must be a JSON object.' }]);
  }
  const record = value as Record<string, unknown>;
  const schemaIssues = validator.issues(record);
  const refused = new Set(schemaIssues.map((i) => i.path.split('.')[0]));
  const issues = [...schemaIssues, ...domainIssues(record, organizationCurrency, refused), ...more(record)];
  if (issues.length > 0) throw invalidRequest(capIssues(issues));
  return { body: record as Static<T>, purchase: toPurchase(record as PurchaseFields, organizationCurrency) };
}

function domainIssues(body: Record<string, unknown>, organizationCurrency: string, refused: Set<string>): ErrorIssue[] {
  const issues: ErrorIssue[] = [];
  const check = (field: string) => Object.hasOwn(body, field) && !refused.has(field);
  if (check('amountMinor')) {
    const issue = amountIssue(body);
    if (issue) issues.push(issue);
  }
  if (!refused.has('currency')) {
    const currency = body.currency ?? organizationCurrency;
    if (!isIsoCurrency(currency)) issues.push({ path: 'currency', code: 'CURRENCY_NOT_ISO_4217', message: `${String(currency)} is not an ISO 4217 currency.` });
  }
  if (check('merchant') && merchantKey(body.merchant as string) === '') {
    issues.push({ path: 'merchant', code: 'MERCHANT_EMPTY', message: 'merchant needs letters or digits.' });
  }
  if (check('reason') && (body.reason as string).trim() === '') issues.push({ path: 'reason', code: 'REASON_EMPTY', message: 'reason must say why.' });
  if (check('metadata')) issues.push(...metadataIssues(body.metadata, 'metadata'));
  return issues;
}

const AMOUNT_MESSAGES = {
  AMOUNT_NOT_INTEGER: 'amountMinor is a whole number of minor units.',
  AMOUNT_NOT_POSITIVE: 'amountMinor must be greater than zero.',
  AMOUNT_TOO_LARGE: `amountMinor is at most ${MAX_STORED_MINOR}.`,
};

/** What is wrong with body.amountMinor (a string or a number) by its value and how it was written; null when nothing is. */
function amountIssue(body: Record<string, unknown>): ErrorIssue | null {
  const code = minorAmountFault(body, 'amountMinor');
  return code === null ? null : { path: 'amountMinor', code, message: AMOUNT_MESSAGES[code] };
}

/**
 * Keys metadata refuses by rule (RESERVED_KEY), though valid JSON: `__proto__`, which a store copying
 * documents by assignment would turn into a prototype, `_bsontype`, by which the MongoDB driver's
 * BSON serialiser recognises its own value classes (it refuses a plain object carrying one, so the
 * write would fail), and any key holding a NUL character, which a BSON field name (a C string) cannot
 * (both stores refuse it). And numbers beyond a double's range (OUT_OF_RANGE, src/json.ts): a double
 * cannot store one, and metadata has no limit to judge it by. The body's depth is already bounded.
 */
const RESERVED_KEYS = new Set(['__proto__', '_bsontype']);

const reserved = (key: string) => RESERVED_KEYS.has(key) || key.includes('\0');

export function metadataIssues(value: unknown, path: string): ErrorIssue[] {
  const issues: ErrorIssue[] = [];
  const stack: [unknown, string][] = [[value, path]];
  while (stack.length > 0) {
    const [current, at] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    for (const [key, child] of Object.entries(current)) {
      if (reserved(key)) issues.push({ path: `${at}.${key}`, code: 'RESERVED_KEY', message: `${JSON.stringify(key)} is not accepted as a key.` });
      else if (beyondDouble(current, key)) issues.push({ path: `${at}.${key}`, code: 'OUT_OF_RANGE', message: `"${at}.${key}" is beyond the range of a double (about 1.8e308).` });
      else stack.push([child, `${at}.${key}`]);
    }
  }
  return issues;
}

/**
 * What "the same body" means for Idempotency-Key (docs/reference/contract.md §2.1, §4.1): the parsed, normalised request,
 * so "1999" and 1999 are one MinorAmount, null and absent are one, and key order or white space
 * (canonicalised by the caller) make no difference; a metadata number counts by the value written, not the
 * double it reads as (canonicalJson).
 */
export function idempotentRequest(purchase: PurchaseInput, metadata: unknown) {
  return {
    merchant: purchase.merchant,
    amountMinor: purchase.amountMinor.toString(),
    reason: purchase.reason,
    currency: purchase.currency,
    category: purchase.category,
    merchantDomain: purchase.merchantDomain,
    metadata: metadata ?? null,
  };
}

function toPurchase(body: PurchaseFields, organizationCurrency: string): PurchaseInput {
  return {
    merchant: body.merchant,
    merchantKey: merchantKey(body.merchant),
    merchantDomain: body.merchantDomain ?? null,
    amountMinor: parseMinor(body.amountMinor)!,
    currency: body.currency ?? organizationCurrency,
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
