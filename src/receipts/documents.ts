// The stored side of receipts: the deployment's signing keys, each organisation's chain head, and the
// receipts themselves (docs/integrate/receipts.md).
import type { StoreDb } from '../store/store.ts';
import type { PublicJwk } from './verify.ts';

export const RECEIPT_COLLECTIONS = { keys: 'signing_keys', chains: 'receipt_chains', receipts: 'receipts' } as const;

export interface SigningKeyDoc {
  /** The key's RFC 7638 thumbprint (base64url SHA-256). */
  _id: string;
  publicJwk: Omit<PublicJwk, 'kid' | 'alg' | 'use'>;
  /**
   * The private key (PKCS#8 DER): `v1.…` sealed with the deployment's encryption key (src/webhooks/secrets.ts,
   * the key's id as associated data), or `plain.<base64url>` where no encryption key is configured;
   * for a key DECISION_SIGNING_KEY gives, `configured.` and its public half sealed likewise
   * (`public:<id>` as associated data), or bare `configured` without an encryption key.
   */
  privateKey: string;
  createdAt: Date;
  /** When it last became the key that signs: the JWKS lists the keys by it, newest first. Absent on keys stored before it existed: createdAt stands for it. */
  since?: Date;
}

/** An organisation's chain head: the last receipt's seq and the hash of its compact JWS. */
export interface ReceiptChainDoc {
  _id: string;
  seq: number;
  head: string;
}

export interface ReceiptDoc {
  /** `${organizationId}:${seq}`: one receipt per place in the chain. */
  _id: string;
  organizationId: string;
  seq: number;
  purchaseId: string;
  decisionId: string;
  jws: string;
  /**
   * Not signed: what drafts in shadow read of the decision (src/policies/shadows.ts ShadowInput), present
   * on a purchase's first decision while its organisation had a shadow.
   */
  shadow?: string;
}

export const receiptCollections = (db: StoreDb) => ({
  keys: db.collection<SigningKeyDoc>(RECEIPT_COLLECTIONS.keys),
  chains: db.collection<ReceiptChainDoc>(RECEIPT_COLLECTIONS.chains),
  receipts: db.collection<ReceiptDoc>(RECEIPT_COLLECTIONS.receipts),
});
