// Building blocks of the wire contract (docs/reference/contract.md §2.1).
import Type from 'typebox';

export const Uuid = Type.String({ format: 'uuid', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' });
export const Currency = Type.String({ pattern: '^[A-Z]{3}$' });
/** On input a MinorAmount is a decimal string or a JSON integer; range checks happen in the domain. */
export const MinorAmountInput = Type.Union([Type.String({ pattern: '^-?\\d+$', maxLength: 40 }), Type.Integer()]);
export const MinorAmount = Type.String({ pattern: '^-?\\d+$' });
export const Timestamp = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$' });
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const AgentStatus = Type.Union([Type.Literal('ENABLED'), Type.Literal('DISABLED'), Type.Literal('ARCHIVED')]);
export const PolicyStatus = Type.Union([Type.Literal('ACTIVE'), Type.Literal('DISABLED'), Type.Literal('ARCHIVED')]);
export const VersionStatus = Type.Union([Type.Literal('DRAFT'), Type.Literal('ACTIVE'), Type.Literal('ARCHIVED')]);
export const ScopeType = Type.Union([Type.Literal('ORGANIZATION'), Type.Literal('AGENT')]);
export const RuleType = Type.Union([Type.Literal('AMOUNT_LIMIT'), Type.Literal('SPEND_LIMIT')]);
export const RuleEffect = Type.Union([Type.Literal('BLOCK'), Type.Literal('REQUIRE_APPROVAL')]);
export const PeriodKind = Type.Union([Type.Literal('PER_REQUEST'), Type.Literal('DAY'), Type.Literal('MONTH')]);
export const ListType = Type.Union([Type.Literal('ALLOW'), Type.Literal('BLOCK')]);
