// Request bodies of docs/reference/contract.md §4.1 and §4.3-4.5. Unknown fields are refused (docs/reference/contract.md §1 rule 6).
import Type from 'typebox';
import { Currency, MerchantName, MinorAmountInput, NO_CONTROL_CHARACTERS, Uuid } from './common.ts';

// An empty merchant or reason is the domain's MERCHANT_EMPTY / REASON_EMPTY, not a length problem.
const Text = (max: number) => Type.String({ maxLength: max });
const OptionalNullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));

const purchaseFields = {
  merchant: MerchantName(),
  amountMinor: MinorAmountInput,
  reason: Text(2000),
  currency: Type.Optional(Type.Union([Currency, Type.Null()])),
  // Labels, as a merchant is: a line break in one would forge lines of the approvers' email (src/approvals/notice-message.ts).
  category: OptionalNullable(Type.String({ maxLength: 100, pattern: NO_CONTROL_CHARACTERS })),
  merchantDomain: OptionalNullable(Type.String({ maxLength: 253, pattern: NO_CONTROL_CHARACTERS })),
};

export const PurchaseRequestBody = Type.Object(
  { ...purchaseFields, metadata: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()])) },
  { additionalProperties: false },
);

export const CurrentPoliciesSimulationBody = Type.Object(
  { ...purchaseFields, agentId: Type.Optional(Type.Union([Uuid, Type.Null()])) },
  { additionalProperties: false },
);

export const VersionSimulationBody = Type.Object({ ...purchaseFields, policyVersionId: Uuid }, { additionalProperties: false });

export type PurchaseRequestBody = Type.Static<typeof PurchaseRequestBody>;
export type CurrentPoliciesSimulationBody = Type.Static<typeof CurrentPoliciesSimulationBody>;
export type VersionSimulationBody = Type.Static<typeof VersionSimulationBody>;

/** Idempotency-Key: 1..255 printable ASCII (docs/reference/decisions.md). */
export const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;
