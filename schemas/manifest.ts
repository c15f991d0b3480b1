// The organisation manifest (docs/internals/design.md §5; README "Manifests"). Handles are the manifest's
// stable names: applying the same file twice changes nothing.
import Type from 'typebox';
import { AgentStatus, Currency, ListType, MerchantName, MinorAmountInput, NO_CONTROL_CHARACTERS, PeriodKind, PolicyStatus, RuleEffect, RuleType, ScopeType } from './common.ts';

const Handle = Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' });
// Names are shown in emails, events, logs and the dashboard: no control character or line break, as merchant names.
const Name = Type.String({ minLength: 1, maxLength: 200, pattern: NO_CONTROL_CHARACTERS });
export const PersonRole = Type.Union([Type.Literal('approver'), Type.Literal('viewer'), Type.Literal('admin')]);
export const DEFAULT_ROLES = ['approver'] as const;
const Description = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);

export const ManifestRule = Type.Object(
  {
    ruleType: RuleType,
    effect: RuleEffect,
    periodKind: PeriodKind,
    amountMinor: MinorAmountInput,
    currency: Type.Optional(Type.Union([Currency, Type.Null()])),
    approvalsRequired: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 5,
        description: 'REQUIRE_APPROVAL rules only: how many distinct approvers must approve a purchase this rule escalates (default 1).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ManifestMerchant = Type.Object(
  { listType: ListType, label: MerchantName({ minLength: 1 }) },
  { additionalProperties: false },
);

export const ManifestPolicy = Type.Object(
  {
    handle: Handle,
    name: Name,
    description: Type.Optional(Description),
    status: Type.Optional(PolicyStatus),
    scope: ScopeType,
    agents: Type.Optional(Type.Array(Handle, { maxItems: 1000, uniqueItems: true })),
    currencies: Type.Array(Currency, { minItems: 1, maxItems: 50 }),
    activate: Type.Optional(Type.Boolean()),
    rules: Type.Array(ManifestRule, { maxItems: 100 }),
    merchants: Type.Optional(Type.Array(ManifestMerchant, { maxItems: 1000 })),
  },
  { additionalProperties: false },
);

export const Manifest = Type.Object(
  {
    organization: Type.Object(
      {
        handle: Handle,
        name: Name,
        currency: Currency,
        timezone: Type.String({ minLength: 1, maxLength: 100 }),
        approvalTtl: Type.Optional(Type.String({ minLength: 2, maxLength: 40 })),
        status: Type.Optional(Type.Union([Type.Literal('ACTIVE'), Type.Literal('SUSPENDED')])),
      },
      { additionalProperties: false },
    ),
    people: Type.Optional(
      Type.Array(
        Type.Object(
          {
            handle: Handle,
            name: Name,
            email: Type.String({ minLength: 3, maxLength: 320, pattern: '^[^@\\s\\u0000-\\u001F\\u007F-\\u009F]+@[^@\\s\\u0000-\\u001F\\u007F-\\u009F]+$' }),
            // What the person may do in the dashboard (README "The people's dashboard"); default [approver].
            roles: Type.Optional(Type.Array(PersonRole, { minItems: 1, maxItems: 3, uniqueItems: true })),
          },
          { additionalProperties: false },
        ),
        { maxItems: 1000 },
      ),
    ),
    agents: Type.Optional(
      Type.Array(
        Type.Object(
          { handle: Handle, name: Name, description: Type.Optional(Description), status: Type.Optional(AgentStatus) },
          { additionalProperties: false },
        ),
        { maxItems: 10000 },
      ),
    ),
    policies: Type.Optional(Type.Array(ManifestPolicy, { maxItems: 1000 })),
    apiKeys: Type.Optional(
      Type.Array(
        Type.Object(
          {
            handle: Handle,
            agent: Type.Optional(Handle),
            expiresAt: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
            revoked: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        { maxItems: 1000 },
      ),
    ),
  },
  { additionalProperties: false },
);

export type Manifest = Type.Static<typeof Manifest>;
export type ManifestPolicy = Type.Static<typeof ManifestPolicy>;
