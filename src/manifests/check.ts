// Everything that can be wrong with a manifest, found before anything is written
// (a manifest is refused whole, with every problem listed).
import { Duration } from 'luxon';
import type { ErrorIssue } from '../http/errors.ts';
import { compile } from '../http/validate.ts';
import { Manifest } from '../../schemas/manifest.ts';
import { isIsoCurrency } from '../engine/currency.ts';
import { merchantKey } from '../engine/merchant-key.ts';
import { MAX_STORED_MINOR, minorAmountFault } from '../money.ts';
import { canonicalZone } from '../timezones.ts';
import { writtenAsInteger } from '../json.ts';

const LIMIT_MESSAGES = {
  AMOUNT_NOT_INTEGER: 'A limit is a whole number of minor units, written without a fraction or an exponent.',
  AMOUNT_NOT_POSITIVE: 'A limit is a positive whole number of minor units.',
  AMOUNT_TOO_LARGE: `A limit is at most ${MAX_STORED_MINOR}.`,
};

const validator = compile(Manifest);

/**
 * An approval TTL in the one spelling it is stored in: hours, minutes and seconds of its fixed length
 * (`P1D`, `PT24H` and `PT86400S` are all `PT24H`), so that another spelling of the same length is no change.
 */
export const canonicalTtl = (ttl: string): string => Duration.fromMillis(Duration.fromISO(ttl).as('milliseconds')).shiftTo('hours', 'minutes', 'seconds').toISO()!;

export const keyBindingImmutable = (index: number): ErrorIssue => ({
  path: `apiKeys.${index}.agent`,
  code: 'KEY_BINDING_IMMUTABLE',
  message: 'A key cannot be rebound; revoke it and issue one under a new handle.',
});

/** `revoked: false` on a revoked key: revocation is final (docs/reference/decisions.md), so nothing could honour it. */
export const keyRevocationFinal = (index: number): ErrorIssue => ({
  path: `apiKeys.${index}.revoked`,
  code: 'KEY_REVOKED',
  message: 'This key is revoked, and a revoked key stays revoked; issue one under a new handle.',
});

function duplicates(list: { handle: string }[] | undefined, path: string, issues: ErrorIssue[]) {
  const seen = new Set<string>();
  (list ?? []).forEach((item, i) => {
    if (seen.has(item.handle)) issues.push({ path: `${path}.${i}.handle`, code: 'DUPLICATE_HANDLE', message: `Handle "${item.handle}" is used twice.` });
    seen.add(item.handle);
  });
}

/**
 * Returns the issues of a manifest. `existingAgents` are handles already stored for the organisation,
 * so a manifest may refer to agents it does not list again; `existingKeys` the agent handle each of its
 * keys is bound to (null: organization-scoped), a binding no manifest may change.
 */
export function checkManifest(
  input: unknown,
  existingAgents: ReadonlySet<string> = new Set(),
  existingKeys: ReadonlyMap<string, string | null> = new Map(),
  revokedKeys: ReadonlySet<string> = new Set(),
): ErrorIssue[] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return [{ path: '', code: 'INVALID_TYPE', message: 'A manifest is an object.' }];
  }
  const issues = validator.issues(input);
  if (issues.length > 0) return issues;
  const m = input as Manifest;
  const org = m.organization;
  if (!isIsoCurrency(org.currency)) issues.push({ path: 'organization.currency', code: 'CURRENCY_NOT_ISO_4217', message: `${org.currency} is not an ISO 4217 currency.` });
  if (canonicalZone(org.timezone) === null) issues.push({ path: 'organization.timezone', code: 'INVALID_TIMEZONE', message: `${org.timezone} is not an IANA time zone.` });
  if (org.approvalTtl !== undefined) {
    const ttl = Duration.fromISO(org.approvalTtl);
    if (!ttl.isValid || ttl.as('seconds') < 1 || ttl.as('days') > 90) {
      issues.push({ path: 'organization.approvalTtl', code: 'INVALID_DURATION', message: 'approvalTtl must be an ISO 8601 duration between PT1S and P90D.' });
    }
  }
  duplicates(m.people, 'people', issues);
  duplicates(m.agents, 'agents', issues);
  duplicates(m.policies, 'policies', issues);
  duplicates(m.apiKeys, 'apiKeys', issues);
  const agents = new Set([...existingAgents, ...(m.agents ?? []).map((a) => a.handle)]);

  (m.policies ?? []).forEach((p, i) => {
    const at = `policies.${i}`;
    p.currencies.forEach((c, j) => {
      if (!isIsoCurrency(c)) issues.push({ path: `${at}.currencies.${j}`, code: 'CURRENCY_NOT_ISO_4217', message: `${c} is not an ISO 4217 currency.` });
    });
    if (new Set(p.currencies).size !== p.currencies.length) issues.push({ path: `${at}.currencies`, code: 'DUPLICATE_ITEMS', message: 'A currency is listed twice.' });
    if (p.scope === 'AGENT' && (p.agents ?? []).length === 0) issues.push({ path: `${at}.agents`, code: 'AGENTS_REQUIRED', message: 'An AGENT-scoped policy lists at least one agent.' });
    if (p.scope === 'ORGANIZATION' && (p.agents ?? []).length > 0) issues.push({ path: `${at}.agents`, code: 'AGENTS_NOT_PERMITTED', message: 'An ORGANIZATION-scoped policy governs every agent; do not list agents.' });
    (p.agents ?? []).forEach((a, j) => {
      if (!agents.has(a)) issues.push({ path: `${at}.agents.${j}`, code: 'UNKNOWN_AGENT', message: `No agent with handle "${a}".` });
    });
    p.rules.forEach((r, j) => {
      // Judged as a purchase's amountMinor is (src/purchases/input.ts).
      const fault = minorAmountFault(r, 'amountMinor');
      if (fault !== null) issues.push({ path: `${at}.rules.${j}.amountMinor`, code: fault, message: LIMIT_MESSAGES[fault] });
      if (r.ruleType === 'AMOUNT_LIMIT' && r.periodKind !== 'PER_REQUEST') issues.push({ path: `${at}.rules.${j}.periodKind`, code: 'PERIOD_MISMATCH', message: 'AMOUNT_LIMIT rules are PER_REQUEST.' });
      if (r.ruleType === 'SPEND_LIMIT' && r.periodKind === 'PER_REQUEST') issues.push({ path: `${at}.rules.${j}.periodKind`, code: 'PERIOD_MISMATCH', message: 'SPEND_LIMIT rules are DAY or MONTH.' });
      if (r.currency && !isIsoCurrency(r.currency)) issues.push({ path: `${at}.rules.${j}.currency`, code: 'CURRENCY_NOT_ISO_4217', message: `${r.currency} is not an ISO 4217 currency.` });
      // A quorum of 1.0, 2e0 or 1.0000000000000001 arrives as a whole number: refused as 1.5 is, not rounded (src/json.ts).
      if (r.approvalsRequired !== undefined && !writtenAsInteger(r, 'approvalsRequired')) {
        issues.push({ path: `${at}.rules.${j}.approvalsRequired`, code: 'INVALID_TYPE', message: 'approvalsRequired is a whole number, written as one (2, not 2.0 or 2e0).' });
      }
      if (r.approvalsRequired !== undefined && r.effect !== 'REQUIRE_APPROVAL') {
        issues.push({ path: `${at}.rules.${j}.approvalsRequired`, code: 'APPROVALS_REQUIRED_NOT_PERMITTED', message: 'Only a REQUIRE_APPROVAL rule asks for approvals; remove approvalsRequired from a BLOCK rule.' });
      }
    });
    const keys = new Set<string>();
    (p.merchants ?? []).forEach((entry, j) => {
      const key = merchantKey(entry.label);
      if (key === '') issues.push({ path: `${at}.merchants.${j}.label`, code: 'MERCHANT_LABEL_EMPTY', message: 'A merchant label needs letters or digits.' });
      const id = `${entry.listType}:${key}`;
      if (keys.has(id)) issues.push({ path: `${at}.merchants.${j}.label`, code: 'DUPLICATE_MERCHANT', message: `"${entry.label}" is already on the ${entry.listType} list.` });
      keys.add(id);
    });
  });

  (m.apiKeys ?? []).forEach((k, i) => {
    if (k.agent !== undefined && !agents.has(k.agent)) issues.push({ path: `apiKeys.${i}.agent`, code: 'UNKNOWN_AGENT', message: `No agent with handle "${k.agent}".` });
    const bound = existingKeys.get(k.handle);
    if (bound !== undefined && bound !== (k.agent ?? null)) issues.push(keyBindingImmutable(i));
    if (k.revoked === false && revokedKeys.has(k.handle)) issues.push(keyRevocationFinal(i));
    if (k.expiresAt && Number.isNaN(Date.parse(k.expiresAt))) issues.push({ path: `apiKeys.${i}.expiresAt`, code: 'INVALID_FORMAT', message: 'expiresAt is an ISO 8601 instant.' });
  });
  return issues;
}
