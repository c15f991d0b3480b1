// Building blocks of the wire contract (docs/reference/contract.md §2.1).
import Type from 'typebox';

export const Uuid = Type.String({ format: 'uuid', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' });
export const Currency = Type.String({ pattern: '^[A-Z]{3}$' });
/**
 * On input a MinorAmount is a decimal string or a JSON integer; range checks happen in the domain, by
 * value, so no length is capped here: leading zeros are allowed, and 41 nines are AMOUNT_TOO_LARGE.
 */
export const MinorAmountInput = Type.Union([Type.String({ pattern: '^-?\\d+$' }), Type.Integer()]);
export const MinorAmount = Type.String({ pattern: '^-?\\d+$' });
export const Timestamp = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$' });
/**
 * No control character or line break: C0 (NUL, tab, CR, LF...), DEL, C1 (NEL...), U+2028 and U+2029.
 * A name holding one is a client's mistake or an attempt to forge a log line or a header
 * (docs/reference/decisions.md); format characters (zero-width, bidi) stay allowed, the merchant key drops them.
 */
export const NO_CONTROL_CHARACTERS = '^[^\\u0000-\\u001F\\u007F-\\u009F\\u2028\\u2029]*$';
/** A merchant as written by a person or an agent: a purchase's `merchant`, a policy's merchant label. */
export const MerchantName = (options: { minLength?: number } = {}) => Type.String({ ...options, maxLength: 200, pattern: NO_CONTROL_CHARACTERS });
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const AgentStatus = Type.Union([Type.Literal('ENABLED'), Type.Literal('DISABLED'), Type.Literal('ARCHIVED')]);
export const PolicyStatus = Type.Union([Type.Literal('ACTIVE'), Type.Literal('DISABLED'), Type.Literal('ARCHIVED')]);
export const VersionStatus = Type.Union([Type.Literal('DRAFT'), Type.Literal('ACTIVE'), Type.Literal('ARCHIVED')]);
export const ScopeType = Type.Union([Type.Literal('ORGANIZATION'), Type.Literal('AGENT')]);
export const RuleType = Type.Union([Type.Literal('AMOUNT_LIMIT'), Type.Literal('SPEND_LIMIT')]);
export const RuleEffect = Type.Union([Type.Literal('BLOCK'), Type.Literal('REQUIRE_APPROVAL')]);
export const PeriodKind = Type.Union([Type.Literal('PER_REQUEST'), Type.Literal('DAY'), Type.Literal('MONTH')]);
export const ListType = Type.Union([Type.Literal('ALLOW'), Type.Literal('BLOCK')]);
